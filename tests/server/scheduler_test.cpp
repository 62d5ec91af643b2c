// The cross-request scheduler without sockets: rows of concurrent requests with different row
// options equal solo runs bit for bit, small requests overtake queued bulk work, admission is
// bounded, cancelled requests are dropped without disturbing others; long inputs (windows, late
// chunking, a decoder's pieces) give Context::embed's rows. Committed tiny BERT and Qwen3 models.
#include <catch2/catch.hpp>

#include <cstring>
#include <future>

#include "engine/scheduler.h"

using namespace embed;

namespace {

const std::string kModel = std::string(EMBED_FIXTURES_DIR) + "/models/tiny-bert-rank/model.gguf";

std::shared_ptr<const Model> model() {
  static auto m = Model::load(kModel, ModelOptions{Device::Cpu, 2, 0}).value();
  return m;
}

Tokenized tokenize(const ResolvedRequest& r, const std::vector<std::string>& texts) { return tokenize_texts(*model(), r, texts); }

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; i++) s += "word" + std::to_string(i % 5) + " ";
  return s;
}

// `count` token-id sequences of exactly `len` tokens each.
Tokenized ids(const ResolvedRequest& r, size_t count, size_t len) {
  return sequences_from_ids(*model(), r, std::vector<std::vector<int32_t>>(count, std::vector<int32_t>(len, 7)));
}

}  // namespace

TEST_CASE("scheduler: requests batched together get their own rows, equal to solo runs", "[server][scheduler]") {
  Scheduler sched(model(), SchedulerOptions{});
  Context solo(model(), 2);
  const std::vector<std::vector<std::string>> texts = {{"A man plays a guitar.", "x"}, {"x", "Stocks fell.", words(40)}, {words(7)}};
  std::vector<Request> reqs(3);
  reqs[1].dimensions = 8;
  reqs[2].normalize = -1;
  std::vector<std::promise<JobOutcome>> results(3);
  for (size_t k = 0; k < 3; k++) {
    const ResolvedRequest r = resolve_request(model()->describe(), reqs[k], Task::Embed);
    REQUIRE_FALSE(sched.submit(r, tokenize(r, texts[k]), [&, k](JobOutcome o) { results[k].set_value(std::move(o)); }));
  }
  for (size_t k = 0; k < 3; k++) {
    const JobOutcome o = results[k].get_future().get();
    REQUIRE_FALSE(o.error);
    const Embeddings want = solo.embed(texts[k], reqs[k]).value();
    REQUIRE(o.rows.rows == want.rows);
    REQUIRE(o.rows.cols == want.cols);
    CHECK(std::memcmp(o.rows.data.data(), want.data.data(), want.data.size() * 4) == 0);
    CHECK(o.rows.n_tokens == want.n_tokens);
  }
}

TEST_CASE("scheduler: a truncating request reports how many inputs were cut, as Context::embed does", "[server][scheduler]") {
  Scheduler sched(model(), SchedulerOptions{});
  Context solo(model(), 2);
  // Two of the four texts are longer than 12 tokens: 122, 4, 62 and 9 tokens with [CLS] and [SEP]
  // (`embed tokenize`: "short" is 2 730 284 3).
  const std::vector<std::string> texts = {words(40), "short", words(20), "A man plays a guitar."};
  Request req;
  req.max_tokens = 12;
  req.truncate = true;
  for (const TruncationDirection dir : {TruncationDirection::Right, TruncationDirection::Left}) {
    req.truncation_direction = dir;
    const ResolvedRequest r = resolve_request(model()->describe(), req, Task::Embed);
    std::promise<JobOutcome> result;
    REQUIRE_FALSE(sched.submit(r, tokenize(r, texts), [&](JobOutcome o) { result.set_value(std::move(o)); }));
    const JobOutcome o = result.get_future().get();
    REQUIRE_FALSE(o.error);
    const Embeddings want = solo.embed(texts, req).value();
    CHECK(want.truncated == 2);
    CHECK(o.rows.truncated == 2);
    CHECK(o.rows.n_tokens == std::vector<int32_t>{12, 4, 12, 9});
    CHECK(o.rows.n_tokens == want.n_tokens);
    REQUIRE(o.rows.data.size() == want.data.size());
    CHECK(std::memcmp(o.rows.data.data(), want.data.data(), want.data.size() * 4) == 0);
  }
  // Nothing cut: zero.
  const ResolvedRequest whole = resolve_request(model()->describe(), Request{}, Task::Embed);
  std::promise<JobOutcome> result;
  REQUIRE_FALSE(sched.submit(whole, tokenize(whole, texts), [&](JobOutcome o) { result.set_value(std::move(o)); }));
  const JobOutcome o = result.get_future().get();
  REQUIRE_FALSE(o.error);
  CHECK(o.rows.truncated == 0);
  CHECK(o.rows.n_tokens == std::vector<int32_t>{122, 4, 62, 9});
}

TEST_CASE("scheduler: a small request overtakes queued bulk work", "[server][scheduler]") {
  SchedulerOptions so;
  so.max_batch_tokens = 64;
  so.interactive_tokens = 16;
  Scheduler sched(model(), so);
  const ResolvedRequest r = resolve_request(model()->describe(), Request{}, Task::Embed);
  // Hold the first pass until everything is queued, then count passes until each request is done.
  std::promise<void> queued;
  std::shared_future<void> all_queued = queued.get_future().share();
  std::atomic<int> passes{0};
  sched.on_pass([&](const PassStats& p) {
    CHECK(p.tokens <= 64);
    if (passes++ == 0) all_queued.wait();
  });
  std::mutex m;
  std::vector<std::pair<std::string, int>> finished;  // (request, passes run when it finished)
  auto done = [&](const std::string& name) {
    return [&, name](JobOutcome o) {
      CHECK_FALSE(o.error);
      std::lock_guard<std::mutex> lock(m);
      finished.emplace_back(name, passes.load());
    };
  };
  // Bulk: 6 sequences of 27 tokens (2 per pass, 3 passes per request); interactive: 4 tokens.
  for (int b = 0; b < 3; b++) REQUIRE_FALSE(sched.submit(r, ids(r, 6, 27), done("bulk" + std::to_string(b))));
  REQUIRE_FALSE(sched.submit(r, ids(r, 1, 4), done("interactive")));
  queued.set_value();
  sched.stop();
  REQUIRE(finished.size() == 4);
  for (const auto& [name, n] : finished)
    if (name == "interactive") CHECK(n <= 2);  // the pass in progress, then its own
  CHECK(finished.front().first == "interactive");
}

TEST_CASE("scheduler: bounded admission, over-long inputs, cancellation, stop", "[server][scheduler]") {
  SchedulerOptions so;
  so.max_requests = 1;
  so.max_batch_tokens = 32;
  Scheduler sched(model(), so);
  const ResolvedRequest r = resolve_request(model()->describe(), Request{}, Task::Embed);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_done;
  REQUIRE_FALSE(sched.submit(r, tokenize(r, {"one"}), [&](JobOutcome o) {
    CHECK_FALSE(o.error);
    released.wait();  // keeps the request inside the scheduler
    first_done.set_value();
  }));
  const std::optional<Status> over = sched.submit(r, tokenize(r, {"two"}), [](JobOutcome) { FAIL("must not run"); });
  REQUIRE(over);
  CHECK(over->kind == ErrorKind::Overloaded);
  release.set_value();
  first_done.get_future().wait();
  while (sched.requests_inside() != 0) std::this_thread::yield();
  Tokenized long_one = ids(r, 2, 8);
  long_one.seqs[1].ids.resize(40, 7);
  const std::optional<Status> too_long = sched.submit(r, std::move(long_one), [](JobOutcome) { FAIL("must not run"); });
  REQUIRE(too_long);
  CHECK(too_long->kind == ErrorKind::InvalidArgument);
  CHECK(too_long->index == 1);
  // A request whose client went away before its pass is dropped with an error.
  auto gone = std::make_shared<std::atomic<bool>>(true);
  std::promise<JobOutcome> dropped;
  REQUIRE_FALSE(sched.submit(r, tokenize(r, {"three"}), [&](JobOutcome o) { dropped.set_value(std::move(o)); }, gone));
  const JobOutcome d = dropped.get_future().get();
  REQUIRE(d.error);
  CHECK(d.error->code == StatusCode::ClientGone);
  while (sched.requests_inside() != 0) std::this_thread::yield();
  sched.stop();
  const std::optional<Status> after = sched.submit(r, tokenize(r, {"four"}), [](JobOutcome) { FAIL("must not run"); });
  REQUIRE(after);
  CHECK(after->kind == ErrorKind::Unsupported);
  CHECK(after->code == StatusCode::ShuttingDown);
}

// The scheduler is a queue in front of the executor: requests with windows (long_inputs chunk),
// late chunking, and a decoder's inputs longer than a pass (run in pieces of max_batch_tokens),
// submitted together, get Context::embed's rows with batch_tokens = max_batch_tokens, bit for bit.
TEST_CASE("scheduler: windows, late chunking and pieces give Context::embed's rows", "[server][scheduler]") {
  // 92, 8 and 118 tokens: within both models' context (128), longer than the passes and windows.
  const std::vector<std::string> texts = {words(30), "A man plays a guitar.", words(38) + "end"};
  auto check = [&](const std::shared_ptr<const Model>& m, const std::vector<Request>& reqs, int64_t batch_tokens) {
    SchedulerOptions so;
    so.max_batch_tokens = batch_tokens;
    Scheduler sched(m, so);
    std::vector<std::promise<JobOutcome>> results(reqs.size());
    for (size_t k = 0; k < reqs.size(); k++) {
      const ResolvedRequest r = resolve_request(m->describe(), reqs[k], Task::Embed);
      const std::optional<Status> refused =
          sched.submit(r, tokenize_texts(*m, r, texts), [&, k](JobOutcome o) { results[k].set_value(std::move(o)); });
      INFO((refused ? refused->message : ""));
      REQUIRE_FALSE(refused);
    }
    Context solo(m, 2);
    RunSettings rs;
    rs.batch_tokens = batch_tokens;
    for (size_t k = 0; k < reqs.size(); k++) {
      INFO("request " << k);
      const JobOutcome o = results[k].get_future().get();
      REQUIRE_FALSE(o.error);
      const Embeddings want = solo.embed(texts, reqs[k], rs).value();
      REQUIRE(o.rows.rows == want.rows);
      REQUIRE(o.rows.cols == want.cols);
      REQUIRE(o.rows.data.size() == want.data.size());
      CHECK(std::memcmp(o.rows.data.data(), want.data.data(), want.data.size() * 4) == 0);
      CHECK(o.rows.n_tokens == want.n_tokens);
      CHECK(o.rows.row_offsets == want.row_offsets);
      CHECK(o.rows.spans == want.spans);
    }
  };
  std::vector<Request> bert(3);
  bert[0].max_tokens = 16;
  bert[0].long_inputs = LongInputs::Chunk;
  bert[1].late_chunking = true;
  bert[1].chunk_tokens = 8;
  bert[2].max_tokens = 16;
  bert[2].long_inputs = LongInputs::Chunk;
  bert[2].dimensions = 8;
  check(model(), bert, 128);  // late chunking's 118-token text runs whole on the bidirectional model
  // The decoder: every text but one is longer than a 16-token pass.
  static auto qwen = Model::load(std::string(EMBED_FIXTURES_DIR) + "/models/tiny-qwen3-embed/model.gguf", ModelOptions{Device::Cpu, 2, 0}).value();
  std::vector<Request> decoder(2);
  decoder[1].pooling = Pooling::Mean;
  check(qwen, decoder, 16);
}
