// The single definition of stb_image's implementation in folio (see stb_image_impl.h).
#define STB_IMAGE_IMPLEMENTATION
#include "doc/stb_image_impl.h"
