// Run-time choice of the SIMD instruction set used by the CPU kernels.
//
// One binary runs on plain x86-64, AVX2 and AVX-512 CPUs: every SIMD kernel is compiled for its
// instruction set with target attributes and picked at run time from what the CPU reports.
#pragma once

#include <optional>
#include <string_view>

namespace folio::kernels {

enum class Isa { Scalar, Avx2, Avx512 };

// The widest instruction set this CPU supports (Avx2 needs AVX2+FMA+F16C; Avx512 needs
// AVX-512 F/BW/VL/DQ as well).
Isa best_isa();

// The instruction set the kernels use now; best_isa() unless set_isa chose otherwise.
Isa active_isa();

// For tests and benchmarks: selects `isa`, clamped to best_isa() so an unsupported one can never
// be chosen. Not meant to be called while kernels are running on other threads.
void set_isa(Isa isa);

// True when loaders should store q4_k and q6_k linears interleaved in groups of 16 rows
// (core/row_interleave.h): the active table reads that layout natively (AVX-512 with VNNI); the
// others go back through the rows, which only costs. set_interleave(false) (tests, benchmarks) keeps
// them as stored.
bool interleave_pays();
void set_interleave(bool enabled);

// AMX tiles for one data type: true when the CPU reports AMX-TILE and that type's products (CPUID
// leaf 7, EDX bit 22 for bf16, 25 for int8) and Linux granted this process the tile data state
// (asked for on the first call, once per process; arch_prctl ARCH_REQ_XCOMP_PERM). A thread that
// uses tiles loads its own configuration first.
enum class AmxType { Bf16, Int8 };
bool amx_granted(AmxType type);

// True when the AVX-512 VNNI table runs its interleaved q4_k and q6_k products of several
// activation rows on AMX int8 tiles (kernels/cpu/q4k_x16_amx.h, q6k_x16_amx.h): amx_granted(Int8)
// and not switched off by set_int8_amx(false) (tests, `bench kernels --amx off`, FOLIO_AMX=0). Same
// bits either way.
bool int8_amx_active();
void set_int8_amx(bool enabled);

// "scalar", "avx2", "avx512".
const char* isa_name(Isa isa);

// The Isa named by isa_name's spelling; nullopt for any other text.
std::optional<Isa> isa_from_name(std::string_view name);

}  // namespace folio::kernels
