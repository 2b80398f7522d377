# Sourced by the scripts and shell tests that start `folio serve --server.port 0`:
#   url_of LOG   prints the base URL the server wrote to LOG once it serves ("folio: serving ... on
#                http://host:port"); exits 1 with the log when it did not start within a minute.
url_of() {
  for _ in $(seq 1 600); do
    local url
    url=$(sed -n 's|^folio: serving .* on \(http://[^ ]*\)$|\1|p' "$1")
    if [ -n "$url" ]; then echo "$url"; return; fi
    sleep 0.1
  done
  echo "folio serve did not start:" >&2
  cat "$1" >&2
  exit 1
}
