#pragma once
// Deterministic mutations of JSON documents for the fuzz-style tests of our decoders of
// untrusted input (one mutator instead of a copy per test). Seeded, so a failure reproduces.
//
//   JsonMutator m({.seeds = corpus, .strings = {"10.0.0.1", "macvlan"}, .seed = 42});
//   bool structural;
//   std::string input = m.Next(&structural);   // text to feed the decoder
//
// Next(): by default half byte-level (bit flips, truncation, splices of two seeds, token insertion or
// deletion: mostly unparsable), half structural (1-4 edits of a seed's tree: delete a member or
// element, duplicate an element, add an unknown key, replace a node by a random value or by a
// subtree of another seed: valid JSON in unexpected shapes).

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/json.h"

namespace spiderpool::base::testing {

struct JsonMutatorOptions {
  std::vector<Json> seeds;           // valid documents to start from (at least one)
  std::vector<std::string> strings;  // domain strings used as replacement values
  std::vector<std::string> keys;     // keys to add to objects ("" = x-unknown-N)
  uint64_t seed = 1;
  int structural_percent = 50;  // share of Next() that are tree edits (the rest byte-level)
  int max_tree_edits = 4;       // a tree mutation makes 1..max_tree_edits edits
};

class JsonMutator {
 public:
  explicit JsonMutator(JsonMutatorOptions options);

  // The next input; `structural` (optional) tells whether it came from a tree edit.
  std::string Next(bool* structural = nullptr);
  // A structurally mutated seed (1..max_tree_edits tree edits).
  Json NextTree();
  // A byte-level mutation of `text`.
  std::string MutateBytes(std::string text);
  // Uniform in [0, n); 0 when n == 0 (for tests that make their own choices).
  size_t Pick(size_t n);
  Json RandomValue();

 private:
  Json* RandomNode(Json* j, Json** parent = nullptr, std::string* key = nullptr,
                   size_t* index = nullptr);
  void MutateTree(Json* j);
  Json RandomScalar();

  JsonMutatorOptions options_;
  std::vector<std::string> texts_;
  std::mt19937_64 rng_;
};

}  // namespace spiderpool::base::testing
