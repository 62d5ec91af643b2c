#!/usr/bin/env python3
"""The playground page (GET /) in a real browser: Debian's chromium, headless, driven through
Debian's python3-selenium and chromium-driver (tools/setup.sh installs them). Against two committed
tiny models (an embedding model and a yes/no reranker) it types into the page, clicks, and checks
what the page shows against the server's own routes: the cosine heatmap against /v1/embeddings,
the ranking against /v1/embeddings (embedding model) or /v1/rerank (reranker), the tokens against
/tokenize, and on a BGE-M3-shaped folder (tests/fixtures/m3_folder.py) the sparse weights against
/embed_sparse and /tokenize. Keeps a screenshot of each page.

    playground_test.py EMBED_BIN SCREENSHOT_DIR
"""
import json, math, os, re, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
MODELS = os.path.join(ROOT, "tests/fixtures/models")

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as e:
    sys.exit(f"playground_test: {e}: install Debian's python3-selenium, chromium and chromium-driver (tools/setup.sh)")


class Server:
    def __init__(self, embed_bin, model):
        self.log = tempfile.NamedTemporaryFile(prefix="embed_playground_", suffix=".log", delete=False)
        self.proc = subprocess.Popen([embed_bin, "serve", model, "-p", "0", "-t", "1"], stderr=self.log, stdout=subprocess.DEVNULL)
        end = time.time() + 60
        self.port = None
        while time.time() < end and self.port is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(self.log.name).read())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                break
            else:
                time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("embed serve did not start: " + open(self.log.name).read())
        self.url = f"http://127.0.0.1:{self.port}"

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req, timeout=30).read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        os.unlink(self.log.name)


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    aa = sum(x * x for x in a)
    bb = sum(y * y for y in b)
    return ab / math.sqrt(aa * bb)


failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,1400"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def type_into(d, element_id, text):
    e = d.find_element(By.ID, element_id)
    e.clear()
    e.send_keys(text)


def click_and_wait(d, button, table):
    # The previous answer is removed first, so the wait sees this click's table.
    d.execute_script("document.getElementById(arguments[0]).parentElement.querySelector('div[id$=\"-out\"]').replaceChildren()", button)
    d.find_element(By.ID, button).click()
    WebDriverWait(d, 30).until(lambda d: d.find_elements(By.ID, table) or d.find_elements(By.CSS_SELECTOR, ".error"))
    errors = d.find_elements(By.CSS_SELECTOR, ".error")
    if errors:
        raise AssertionError(f"the page shows an error after {button}: {errors[0].text}")
    return d.find_element(By.ID, table)


def open_page(d, s):
    d.get(s.url + "/")
    WebDriverWait(d, 30).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")


def embedding_model(d, s, shots):
    open_page(d, s)
    info = json.loads(urllib.request.urlopen(s.url + "/info", timeout=30).read())
    shown = d.find_element(By.ID, "model").text
    check(shown.startswith(info["model_id"] + " (" + info["architecture"]), f"the page names the served model from /info ({shown})")
    check(not d.find_element(By.ID, "sparse").is_displayed(), "a model without a sparse head hides the sparse-weights panel")
    texts = ["A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.", "Ünïcödé 🎸"]
    type_into(d, "sim-texts", "\n".join(texts))
    table = click_and_wait(d, "sim-run", "sim-table")
    vectors = [row["embedding"] for row in s.post("/v1/embeddings", {"input": texts})["data"]]
    cells = [[float(td.get_attribute("data-value")) for td in tr.find_elements(By.CSS_SELECTOR, "td.cell")]
             for tr in table.find_elements(By.TAG_NAME, "tr")[1:]]
    check(len(cells) == len(texts) and all(len(r) == len(texts) for r in cells), "the heatmap has one row and column per text")
    worst = max(abs(cells[i][j] - cosine(vectors[i], vectors[j])) for i in range(len(texts)) for j in range(len(texts)))
    check(worst < 1e-9, f"heatmap cells equal the cosines of /v1/embeddings' vectors (worst difference {worst:.2e})")
    shown = table.find_elements(By.CSS_SELECTOR, "td.cell")[1].text
    check(shown == f"{cells[0][1]:.4f}", f"a cell shows its value to 4 places ({shown})")

    query, docs = "Who plays music?", ["The stock market fell 3% today.", "A man is playing a guitar.", "Someone plays the guitar!"]
    type_into(d, "rank-query", query)
    type_into(d, "rank-docs", "\n".join(docs))
    table = click_and_wait(d, "rank-run", "rank-table")
    v = [row["embedding"] for row in s.post("/v1/embeddings", {"input": [query] + docs})["data"]]
    want = sorted(range(len(docs)), key=lambda i: -cosine(v[0], v[i + 1]))
    rows = table.find_elements(By.TAG_NAME, "tr")[1:]
    got = [int(r.get_attribute("data-index")) for r in rows]
    check(got == want, f"documents ranked by the cosine of /v1/embeddings' vectors ({got} vs {want})")
    check(all(abs(float(r.get_attribute("data-score")) - cosine(v[0], v[i + 1])) < 1e-9 for r, i in zip(rows, got)),
          "each document's score is that cosine")
    check([r.find_elements(By.TAG_NAME, "td")[2].text for r in rows] == [docs[i] for i in want], "each row shows its document")

    text = "Hello, world! [SEP] naïve"
    type_into(d, "tok-text", text)
    table = click_and_wait(d, "tok-run", "tok-table")
    want_tokens = s.post("/tokenize", {"inputs": [text]})[0]
    rows = table.find_elements(By.TAG_NAME, "tr")[1:]
    check([int(r.get_attribute("data-id")) for r in rows] == [t["id"] for t in want_tokens], "token ids equal /tokenize's")
    check([r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == [json.dumps(t["text"], ensure_ascii=False) for t in want_tokens],
          "token texts equal /tokenize's")
    d.save_screenshot(shots + "/playground-embeddings.png")


def reranker(d, s, shots):
    open_page(d, s)
    check(not d.find_element(By.ID, "similarity").is_displayed(), "a reranker's page hides the similarity heatmap")
    query, docs = "What is the capital of France?", ["Paris is the capital of France.", "Bananas are yellow.", "France borders Spain."]
    type_into(d, "rank-query", query)
    type_into(d, "rank-docs", "\n".join(docs))
    table = click_and_wait(d, "rank-run", "rank-table")
    want = s.post("/v1/rerank", {"query": query, "documents": docs})["results"]
    rows = table.find_elements(By.TAG_NAME, "tr")[1:]
    check([int(r.get_attribute("data-index")) for r in rows] == [w["index"] for w in want], "the ranking is /v1/rerank's order")
    check([float(r.get_attribute("data-score")) for r in rows] == [w["relevance_score"] for w in want], "the scores are /v1/rerank's")
    d.save_screenshot(shots + "/playground-reranker.png")


def m3_model(d, s, shots):
    open_page(d, s)
    check(d.find_element(By.ID, "sparse").is_displayed(), "a model with a sparse head shows the sparse-weights panel")
    text = "Die Katze sitzt auf der Matte."
    type_into(d, "sparse-text", text)
    table = click_and_wait(d, "sparse-run", "sparse-table")
    want = sorted(s.post("/embed_sparse", {"inputs": [text]})[0], key=lambda e: (-e["value"], e["index"]))
    pieces = {t["id"]: t["text"] for t in s.post("/tokenize", {"inputs": [text]})[0]}
    rows = table.find_elements(By.TAG_NAME, "tr")[1:]
    check(len(want) >= 3 and [int(r.get_attribute("data-id")) for r in rows] == [e["index"] for e in want],
          f"the panel lists /embed_sparse's ids, heaviest first ({len(want)} entries)")
    check([float(r.get_attribute("data-value")) for r in rows] == [e["value"] for e in want], "the weights are /embed_sparse's")
    check([r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == [json.dumps(pieces[e["index"]], ensure_ascii=False) for e in want],
          "each id is named by its token from /tokenize")
    d.save_screenshot(shots + "/playground-sparse.png")


def main():
    embed_bin, shots = sys.argv[1], sys.argv[2]
    os.makedirs(shots, exist_ok=True)
    d = browser()
    try:
        sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
        import m3_folder
        m3 = m3_folder.write(tempfile.mkdtemp(prefix="embed_playground_m3_") + "/m3")
        for model, run in ((os.path.join(MODELS, "tiny-bert-rank", "model.gguf"), embedding_model),
                           (os.path.join(MODELS, "tiny-qwen3-rerank", "model.gguf"), reranker), (m3, m3_model)):
            s = Server(embed_bin, model)
            try:
                run(d, s, shots)
            finally:
                s.stop()
    finally:
        d.quit()
    if failures:
        sys.exit(f"playground_test: {len(failures)} check(s) failed")
    print(f"playground_test: all checks passed; screenshots in {shots}")


if __name__ == "__main__":
    main()
