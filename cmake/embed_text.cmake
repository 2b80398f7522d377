# Writes OUTPUT, a C++ source defining `std::string_view NAME()` (in namespace folio) that returns the
# bytes of INPUT, so a file ships inside the binary. Usage:
#   cmake -DINPUT=file -DOUTPUT=file.cpp -DNAME=function -DHEADER=dir/header.h -P embed_text.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# Lines of 32 bytes, so the generated file stays readable in a compiler's message.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
"// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n"
"#include \"${HEADER}\"\n\n"
"namespace folio {\n\n"
"namespace {\n"
"const unsigned char kBytes[${size} + 1] = {\n    ${bytes}0};\n"
"}  // namespace\n\n"
"std::string_view ${NAME}() { return {reinterpret_cast<const char*>(kBytes), ${size}}; }\n\n"
"}  // namespace folio\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
