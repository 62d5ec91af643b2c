// The Hub layer's pieces against values from elsewhere: SHA-256 against FIPS 180-2's examples,
// the GGUF choice against llama.cpp's rules (common/download.cpp, spelled out per case), Hub
// names and URL quoting against huggingface_hub's (validate_repo_id, quote), and the cache's
// paths against the layout huggingface_hub writes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "source/gguf_choice.h"
#include "source/hub_cache.h"
#include "source/hub_client.h"
#include "source/model_source.h"
#include "source/sha256.h"
#include "tests/source/scoped_env.h"

using namespace embed;
using namespace embed::source;
using embed::testing::ScopedEnv;

namespace {

std::string sha256_of(const std::string& s) {
  Sha256 h;
  h.update(s.data(), s.size());
  return h.hex();
}

}  // namespace

TEST_CASE("sha256 gives FIPS 180-2's digests, whatever the chunking") {
  CHECK(sha256_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK(sha256_of(two_blocks) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  CHECK(sha256_of(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 pieces;  // odd chunk sizes across block boundaries
  for (size_t at = 0, step = 1; at < million.size(); at += step, step = step * 7 % 1000 + 1)
    pieces.update(million.data() + at, std::min(step, million.size() - at));
  CHECK(pieces.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("the GGUF a quantization tag names, as llama.cpp's -hf chooses it") {
  const std::vector<std::string> files = {"README.md", "mmproj-model-f16.gguf", "model-F16.gguf", "model-IQ4_XS.gguf", "model-Q4_K_M.gguf",
                                          "model-Q8_0.gguf", "model.imatrix.gguf", "sub/model-Q5_K_M.gguf"};
  const std::vector<std::string> c = gguf_candidates(files);
  CHECK(c == std::vector<std::string>{"model-F16.gguf", "model-IQ4_XS.gguf", "model-Q4_K_M.gguf", "model-Q8_0.gguf", "sub/model-Q5_K_M.gguf"});
  CHECK(choose_gguf(c, "Q8_0") == "model-Q8_0.gguf");
  CHECK(choose_gguf(c, "q8_0") == "model-Q8_0.gguf");      // case-insensitive
  CHECK(choose_gguf(c, "f16") == "model-F16.gguf");        // not the mmproj file
  CHECK(choose_gguf(c, "Q5_K_M") == "sub/model-Q5_K_M.gguf");
  CHECK(choose_gguf(c, "Q4_K") == std::nullopt);          // the tag must be followed by '.' or '-'
  CHECK(choose_gguf(c, "Q6_K") == std::nullopt);
  CHECK(choose_gguf(c, "") == "model-Q4_K_M.gguf");        // no tag: Q4_K_M first
  CHECK(choose_gguf({"a-Q8_0.gguf", "a-F32.gguf"}, "") == "a-Q8_0.gguf");  // then Q8_0
  CHECK(choose_gguf({"a-F32.gguf", "b-F16.gguf"}, "") == "a-F32.gguf");    // then the first
  CHECK(choose_gguf({}, "") == std::nullopt);
  CHECK(gguf_tag_of("model-Q4_K_M.gguf") == "Q4_K_M");
  CHECK(gguf_tag_of("x/model.Q8_0.gguf") == "Q8_0");
  CHECK(gguf_tag_of("m-Q4_0-00001-of-00003.gguf") == "Q4_0");
  // A tag as a whole word first: llama.cpp's search alone would take BF16 for F16 here.
  CHECK(choose_gguf({"m-BF16.gguf", "m-F16.gguf"}, "F16") == "m-F16.gguf");
  CHECK(choose_gguf({"m-BF16.gguf", "m-Q8_0.gguf"}, "F16") == "m-BF16.gguf");  // the only one showing it
  // Of a split file only the first part is chosen.
  CHECK(choose_gguf({"m-Q4_0-00002-of-00002.gguf", "m-Q4_0-00001-of-00002.gguf"}, "Q4_0") == "m-Q4_0-00001-of-00002.gguf");
  CHECK(choose_gguf({"m-Q4_0-00002-of-00002.gguf"}, "") == std::nullopt);
  CHECK(is_split_gguf("m-Q4_0-00001-of-00003.gguf"));
  CHECK_FALSE(is_split_gguf("m-Q4_0.gguf"));
}

TEST_CASE("Hub names: ORG/NAME, a quantization tag, a revision, hf://") {
  auto n = parse_hub_name("BAAI/bge-small-en-v1.5");
  REQUIRE(n);
  CHECK(n->repo == "BAAI/bge-small-en-v1.5");
  CHECK(n->revision == "main");
  CHECK(n->quant.empty());
  n = parse_hub_name("ggml-org/embeddinggemma-300M-GGUF:Q8_0");
  REQUIRE(n);
  CHECK(n->repo == "ggml-org/embeddinggemma-300M-GGUF");
  CHECK(n->quant == "Q8_0");
  n = parse_hub_name("hf://org/name@refs/pr/1:Q4_K_M");
  REQUIRE(n);
  CHECK(n->revision == "refs/pr/1");
  CHECK(n->quant == "Q4_K_M");
  n = parse_hub_name("hf://org/name:F16@v1.0");  // the two suffixes in either order
  REQUIRE(n);
  CHECK(n->revision == "v1.0");
  CHECK(n->quant == "F16");
  // Paths and other strings are not names.
  for (const char* not_a_name : {"model.gguf", "default", "/abs/org/name", "./org/name", "a/b/c", "org/model.gguf", "org/-name", "org/na--me",
                                 "org/na..me", "org/name:", "org/name@"})
    CHECK_FALSE(parse_hub_name(not_a_name));
  CHECK_FALSE(parse_hub_name("org/name@../../x"));  // a revision is a path under refs/
  CHECK_THROWS_WITH(parse_hub_name("hf://org"), Catch::Contains("must be ORG/NAME"));
  CHECK_THROWS_WITH(parse_hub_name("hf://org/name:Q8 0"), Catch::Contains("not a quantization tag"));
}

TEST_CASE("URLs are quoted as huggingface_hub quotes them") {
  CHECK(url_quote("refs/pr/1", false) == "refs%2Fpr%2F1");
  CHECK(url_quote("1_Pooling/config.json", true) == "1_Pooling/config.json");
  CHECK(url_quote("a b+c.json", true) == "a%20b%2Bc.json");
}

TEST_CASE("the cache's place and layout follow huggingface_hub's variables") {
  const ScopedEnv a("HF_HUB_CACHE", nullptr), b("HUGGINGFACE_HUB_CACHE", nullptr), c("HF_HOME", nullptr), d("XDG_CACHE_HOME", "/x/cache");
  CHECK(HubCache::from_env().root() == "/x/cache/huggingface/hub");
  {
    const ScopedEnv home("HF_HOME", "/y/hf");
    CHECK(HubCache::from_env().root() == "/y/hf/hub");
    CHECK(hf_home() == "/y/hf");
    const ScopedEnv legacy("HUGGINGFACE_HUB_CACHE", "/z/legacy");
    CHECK(HubCache::from_env().root() == "/z/legacy");
    const ScopedEnv cache("HF_HUB_CACHE", "/z/hub");
    CHECK(HubCache::from_env().root() == "/z/hub");
  }
  const HubCache hc("/c");
  CHECK(hc.repo_dir("BAAI/bge-m3") == "/c/models--BAAI--bge-m3");
  CHECK(hc.snapshot_dir("o/n", std::string(40, 'a')) == "/c/models--o--n/snapshots/" + std::string(40, 'a'));
  CHECK(hc.blob_path("o/n", "abc") == "/c/models--o--n/blobs/abc");
  CHECK(hc.lock_path("o/n", "abc") == "/c/.locks/models--o--n/abc.lock");
  // What may become a file name in the cache.
  for (const char* ok : {"config.json", "1_Pooling/config.json", "refs/pr/1", "a.b/c..d"}) CHECK(is_safe_repo_path(ok));
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/", "a\\b"}) CHECK_FALSE(is_safe_repo_path(bad));
  CHECK_FALSE(is_safe_repo_path(std::string("a\0b", 3)));
  CHECK(is_hex_id(std::string(40, 'a')));
  CHECK(is_hex_id(std::string(64, '0')));
  CHECK_FALSE(is_hex_id(std::string(63, '0')));
  CHECK_FALSE(is_hex_id("../../" + std::string(34, 'a')));
  CHECK(is_commit_hash(std::string(40, 'f')));
  CHECK_FALSE(is_commit_hash(std::string(40, 'F')));
  CHECK_FALSE(is_commit_hash("main"));
}

TEST_CASE("refs, tree listings and snapshot links round-trip in the cache") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("embed-hubcache-test-" + std::to_string(getpid()));
  fs::remove_all(root);
  const HubCache hc(root.string());
  const std::string commit(40, 'c');
  CHECK_FALSE(hc.read_ref("o/n", "main"));
  hc.write_ref("o/n", "refs/pr/1", commit);
  CHECK(hc.read_ref("o/n", "refs/pr/1") == commit);
  std::ifstream ref(root / "models--o--n/refs/refs/pr/1");
  std::string text((std::istreambuf_iterator<char>(ref)), {});
  CHECK(text == commit);  // no newline, as huggingface_hub writes it
  const std::string sha1(40, '1');
  const std::vector<RepoFile> files = {{"b/c.json", 3, sha1, ""}, {"a.gguf", 5, std::string(40, '2'), std::string(64, 'e')}};
  hc.write_tree("o/n", commit, files);
  const auto back = hc.read_tree("o/n", commit);
  REQUIRE(back);
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].path == "a.gguf");  // sorted by path
  CHECK((*back)[0].etag() == std::string(64, 'e'));
  CHECK((*back)[1].etag() == sha1);
  fs::create_directories(root / "models--o--n/blobs");
  std::ofstream(root / "models--o--n/blobs" / sha1) << "abc";
  hc.link_snapshot("o/n", commit, "b/c.json", sha1, true);
  const fs::path pointer = root / "models--o--n/snapshots" / commit / "b/c.json";
  CHECK(fs::read_symlink(pointer) == "../../../blobs/" + sha1);
  std::ifstream in(pointer);
  std::string got;
  in >> got;
  CHECK(got == "abc");
  fs::remove_all(root);
}
