// encoder_view_flops against the DeepEncoder's work counted by hand for the published sizes.
#include <gtest/gtest.h>

#include "core/error.h"
#include "vision/encoder_flops.h"

namespace folio {
namespace {

TEST(EncoderFlops, GlobalViewOfThePublishedEncoder) {
  const VisionConfig c;  // the defaults are the published model's sizes
  const EncoderFlops f = encoder_view_flops(c, 1024);
  // SAM on a 64 x 64 grid (4,096 tokens, width 768): patch embedding 2*4096*768*768; 8 windowed
  // blocks over 25 padded 14 x 14 windows (4,900 rows): qkv + proj + attention 4*25*196^2*768 +
  // MLP on 4,096 rows; 4 global blocks (attention 4*4096^2*768); neck 1x1 + 3x3 on 4,096 tokens,
  // 3x3 stride-2 convolutions to 32^2 x 512 and 16^2 x 1024.
  const double win = 2.0 * 4900 * 768 * 2304 + 2.0 * 4900 * 768 * 768 + 4.0 * 25 * 196 * 196 * 768 +
                     2.0 * 4096 * 768 * 3072 * 2;
  const double glob = 2.0 * 4096 * 768 * 2304 + 2.0 * 4096 * 768 * 768 + 4.0 * 4096 * 4096 * 768 +
                      2.0 * 4096 * 768 * 3072 * 2;
  const double neck = 2.0 * 4096 * 768 * 256 + 2.0 * 4096 * 256 * 256 * 9 + 2.0 * 1024 * 256 * 9 * 512 +
                      2.0 * 256 * 512 * 9 * 1024;
  EXPECT_DOUBLE_EQ(f.sam, 2.0 * 4096 * 768 * 768 + 8 * win + 4 * glob + neck);
  EXPECT_DOUBLE_EQ(f.sam, 972002033664.0);
  // CLIP-L: 24 layers over 257 tokens (CLS + 16^2), width 1024, MLP 4096.
  EXPECT_DOUBLE_EQ(f.clip, 161715683328.0);
  EXPECT_DOUBLE_EQ(f.projector, 2.0 * 256 * 2048 * 1280);
  EXPECT_NEAR(f.total(), 1.135e12, 1e9);
}

TEST(EncoderFlops, TileHasFewerTokensAndSamePadding) {
  const VisionConfig c;
  const EncoderFlops tile = encoder_view_flops(c, 640);  // 40 x 40 grid: 9 windows of 14 x 14
  const EncoderFlops global = encoder_view_flops(c, 1024);
  EXPECT_LT(tile.total(), global.total() / 2);
  EXPECT_DOUBLE_EQ(tile.projector, 2.0 * 100 * 2048 * 1280);  // 10 x 10 output tokens
}

TEST(EncoderFlops, RejectsSizesThatAreNotWholePatches) {
  const VisionConfig c;
  EXPECT_THROW(encoder_view_flops(c, 1000), Error);
  EXPECT_THROW(encoder_view_flops(c, 0), Error);
}

}  // namespace
}  // namespace folio
