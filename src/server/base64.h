// Base64 payloads of requests: plain base64 (RFC 4648, the standard alphabet, padding optional,
// whitespace ignored) and data URIs ("data:image/png;base64,....") as OpenAI clients send images.
//
// Every malformed payload is an ApiError 400 whose message names the field (`what`) and the fault.
#pragma once

#include <string>
#include <string_view>

namespace folio {

// The decoded bytes. ApiError 400 "invalid_base64" naming `what` for a character outside the
// alphabet, misplaced padding, or a length that is not a whole number of bytes; an empty payload is
// refused too.
std::string decode_base64(std::string_view text, const std::string& what);

// Standard base64 with padding (for clients such as `folio bench serve`).
std::string encode_base64(std::string_view bytes);

struct DataUri {
  std::string media_type;  // "image/png"; "" when the URI names none
  std::string bytes;       // decoded
};

// "data:[<media type>][;params];base64,<payload>". ApiError 400 "invalid_image_url" naming `what` for
// anything else (http(s) URLs included: the server never fetches remote content).
DataUri parse_data_uri(std::string_view uri, const std::string& what);

}  // namespace folio
