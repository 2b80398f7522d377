# Sourced by the server shell tests: fields of a `folio bench serve` JSON file's by_kind entry.
# hash_of KIND FILE: the answer hash of KIND (empty when its answers were not all alike).
hash_of() { sed -n "/\"$1\": {/,/}/s|.*\"answer_sha256\": *\"\([0-9a-f]*\)\".*|\1|p" "$2"; }
# distinct_of KIND FILE: how many distinct answers KIND got.
distinct_of() { sed -n "/\"$1\": {/,/}/s|.*\"distinct_answers\": *\([0-9]*\).*|\1|p" "$2"; }
