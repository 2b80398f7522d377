#include "kv/tiered_store.h"

#include "core/error.h"

namespace folio {

size_t TieredStoreStats::bytes() const {
  size_t s = 0;
  for (const auto& t : tiers) s += t.bytes;
  return s;
}

TieredStore::TieredStore(std::vector<std::unique_ptr<KVTier>> tiers) : tiers_(std::move(tiers)) {
  FOLIO_CHECK_INPUT(!tiers_.empty(), "a tiered KV store needs at least one tier");
  for (const auto& t : tiers_) FOLIO_CHECK_INPUT(t != nullptr, "a tiered KV store got a null tier");
  FOLIO_CHECK_INPUT(tiers_[0]->addressable(),
                    "the hot KV tier (" + tiers_[0]->name() + ") must be addressable (RAM or a mapped file)");
  lru_.resize(tiers_.size());
  counters_.resize(tiers_.size());
}

namespace {
std::vector<std::unique_ptr<KVTier>> two(std::unique_ptr<KVTier> hot, std::unique_ptr<KVTier> cold) {
  std::vector<std::unique_ptr<KVTier>> v;
  v.push_back(std::move(hot));
  v.push_back(std::move(cold));
  return v;
}
}  // namespace

TieredStore::TieredStore(std::unique_ptr<KVTier> hot, std::unique_ptr<KVTier> cold)
    : TieredStore(two(std::move(hot), std::move(cold))) {}

TieredStore::Entry& TieredStore::find(const BlockKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) throw Error(Error::Kind::Internal, "tiered KV store holds no block " + to_string(key));
  return it->second;
}

const TieredStore::Entry& TieredStore::find(const BlockKey& key) const {
  return const_cast<TieredStore*>(this)->find(key);
}

void TieredStore::touch(Entry& e) {
  auto& list = lru_[e.tier];
  list.splice(list.begin(), list, e.lru);
}

void TieredStore::move(const BlockKey& key, Entry& e, size_t to) {
  KVTier& src = *tiers_[e.tier];
  const uint8_t* p = src.view(key);
  if (!p) {
    staging_.resize(e.size);
    src.get(key, staging_);
    p = staging_.data();
  }
  // Put first, erase after: if the destination throws, the block is still where it was.
  tiers_[to]->put(key, std::span<const uint8_t>(p, e.size));
  src.erase(key);
  lru_[e.tier].erase(e.lru);
  e.tier = to;
  lru_[to].push_front(key);
  e.lru = lru_[to].begin();
}

bool TieredStore::make_room(size_t t, size_t bytes) {
  KVTier& tier = *tiers_[t];
  if (tier.capacity_bytes() != 0 && bytes > tier.capacity_bytes()) return false;  // would never fit
  while (!tier.can_put(bytes)) {
    if (t + 1 >= tiers_.size()) return false;
    // The least recently used block that is not pinned.
    auto& list = lru_[t];
    auto victim = list.end();
    for (auto it = list.rbegin(); it != list.rend(); ++it)
      if (entries_.at(*it).pins == 0) {
        victim = std::prev(it.base());
        break;
      }
    if (victim == list.end()) return false;
    const BlockKey key = *victim;
    Entry& e = entries_.at(key);
    if (!make_room(t + 1, e.size)) return false;
    move(key, e, t + 1);
    ++counters_[t].demotions;
  }
  return true;
}

void TieredStore::put(const BlockKey& key, std::span<const uint8_t> bytes) {
  std::lock_guard lock(mu_);
  if (bytes.empty()) throw Error(Error::Kind::Internal, "tiered KV store: empty block " + to_string(key));
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    Entry& e = it->second;
    if (e.pins > 0)
      throw Error(Error::Kind::Internal,
                  "tiered KV store: block " + to_string(key) + " is acquired; release it before overwriting it");
    if (e.size == bytes.size()) {
      tiers_[e.tier]->put(key, bytes);  // same size: same slot, no budget change
      touch(e);
      return;
    }
    erase_locked(key, e);
  }
  for (size_t t = 0; t < tiers_.size(); ++t) {
    if (!make_room(t, bytes.size())) continue;
    tiers_[t]->put(key, bytes);
    lru_[t].push_front(key);
    entries_.emplace(key, Entry{t, bytes.size(), 0, lru_[t].begin()});
    return;
  }
  throw Error(Error::Kind::OutOfMemory, "tiered KV store full: no tier can take block " + to_string(key) + " (" +
                                            std::to_string(bytes.size()) + " bytes); " + describe_tiers());
}

const uint8_t* TieredStore::acquire(const BlockKey& key) {
  std::lock_guard lock(mu_);
  Entry& e = find(key);
  ++acquires_;
  const size_t from = e.tier;
  if (from > 0 && e.pins == 0) {
    // Promote into the hottest addressable tier with free room now; nothing is demoted for it.
    for (size_t u = 0; u < from; ++u)
      if (tiers_[u]->addressable() && tiers_[u]->can_put(e.size)) {
        move(key, e, u);
        ++counters_[from].promotions;
        break;
      }
    if (e.tier == from && !tiers_[from]->addressable()) {
      // Cannot be read in place: make room by demotion in the hottest addressable tier that allows it.
      bool moved = false;
      for (size_t u = 0; u < from && !moved; ++u)
        if (tiers_[u]->addressable() && make_room(u, e.size)) {
          move(key, e, u);
          ++counters_[from].promotions;
          moved = true;
        }
      if (!moved)
        throw Error(Error::Kind::OutOfMemory, "tiered KV store: no room to bring block " + to_string(key) + " (" +
                                                  std::to_string(e.size) + " bytes) from the " + tiers_[from]->name() +
                                                  " tier; " + describe_tiers());
    }
  }
  if (e.tier == from) ++counters_[from].hits;  // in place: a hot hit, or a cold read below tier 0
  touch(e);
  ++e.pins;
  return tiers_[e.tier]->view(key);
}

void TieredStore::release(const BlockKey& key) {
  std::lock_guard lock(mu_);
  Entry& e = find(key);
  if (e.pins == 0)
    throw Error(Error::Kind::Internal, "tiered KV store: release of block " + to_string(key) + " that is not acquired");
  --e.pins;
}

void TieredStore::erase_locked(const BlockKey& key, Entry& e) {
  tiers_[e.tier]->erase(key);
  lru_[e.tier].erase(e.lru);
  entries_.erase(key);
}

void TieredStore::erase(const BlockKey& key) {
  std::lock_guard lock(mu_);
  Entry& e = find(key);
  if (e.pins > 0)
    throw Error(Error::Kind::Internal, "tiered KV store: cannot erase block " + to_string(key) + " while it is acquired");
  erase_locked(key, e);
}

size_t TieredStore::erase_sequence(int64_t seq) {
  std::lock_guard lock(mu_);
  std::vector<BlockKey> keys;
  for (const auto& [k, e] : entries_)
    if (k.seq == seq) {
      if (e.pins > 0)
        throw Error(Error::Kind::Internal,
                    "tiered KV store: cannot erase sequence " + std::to_string(seq) + ", block " + to_string(k) + " is acquired");
      keys.push_back(k);
    }
  for (const auto& k : keys) erase_locked(k, entries_.at(k));
  return keys.size();
}

bool TieredStore::contains(const BlockKey& key) const {
  std::lock_guard lock(mu_);
  return entries_.count(key) != 0;
}

size_t TieredStore::size_of(const BlockKey& key) const {
  std::lock_guard lock(mu_);
  return find(key).size;
}

size_t TieredStore::tier_of(const BlockKey& key) const {
  std::lock_guard lock(mu_);
  return find(key).tier;
}

TieredStoreStats TieredStore::stats() const {
  std::lock_guard lock(mu_);
  TieredStoreStats s;
  s.acquires = acquires_;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    const KVTier& t = *tiers_[i];
    TierStats ts;
    ts.name = t.name();
    ts.location = t.location();
    ts.capacity_bytes = t.capacity_bytes();
    ts.bytes = t.bytes_in_use();
    ts.footprint_bytes = t.footprint_bytes();
    ts.blocks = t.block_count();
    ts.hits = counters_[i].hits;
    ts.promotions = counters_[i].promotions;
    ts.demotions = counters_[i].demotions;
    s.tiers.push_back(ts);
  }
  for (const auto& [k, e] : entries_)
    if (e.pins > 0) ++s.tiers[e.tier].pinned_blocks;
  s.misses = acquires_ - counters_[0].hits;
  return s;
}

std::string TieredStore::describe_tiers() const {
  std::vector<size_t> pinned(tiers_.size(), 0);
  for (const auto& [k, e] : entries_)
    if (e.pins > 0) ++pinned[e.tier];
  std::string out;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    const KVTier& t = *tiers_[i];
    if (i) out += "; ";
    out += t.name() + " tier (" + t.location() + "): " + std::to_string(t.footprint_bytes()) + " of " +
           (t.capacity_bytes() ? std::to_string(t.capacity_bytes()) + " budget bytes" : std::string("unlimited bytes")) +
           " used, " + std::to_string(t.block_count()) + " blocks, " + std::to_string(pinned[i]) + " pinned";
  }
  return out;
}

}  // namespace folio
