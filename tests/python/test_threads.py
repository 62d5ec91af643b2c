# One Model shared by several Python threads: concurrent calls (each on its own engine Context)
# give the rows of serial calls bit for bit, and the GIL is released while the engine computes.
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import embed
from conftest import TEXTS, same_bits, tiny


@pytest.fixture(scope="module")
def model():
    return embed.Model(tiny("tiny-qwen3-embed"), threads=1)


def test_concurrent_calls_equal_serial_calls(model):
    inputs = [TEXTS[i:] + TEXTS[:i] for i in range(len(TEXTS))]
    serial = [model.encode(texts, dimensions=32) for texts in inputs]
    reranker = embed.Model(tiny("tiny-bert-rank"), threads=1)
    serial_rank = [reranker.rerank(texts[0], texts) for texts in inputs]
    barrier = threading.Barrier(4)

    def work(k):
        barrier.wait()
        for _ in range(5):
            for i, texts in enumerate(inputs):
                if (i + k) % 2:
                    same_bits(model.encode(texts, dimensions=32), serial[i])
                else:
                    assert reranker.rerank(texts[0], texts) == serial_rank[i]
        return k

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(work, range(4))) == [0, 1, 2, 3]


def test_the_gil_is_released_during_compute(model):
    texts = [t * 2 for t in TEXTS] * 150  # at most 127 tokens each
    start = time.perf_counter()
    model.encode(texts)
    alone = time.perf_counter() - start
    assert alone > 0.1, f"the call is too short ({alone:.3f}s) to observe"
    # The main thread keeps running Python while another thread is inside encode(): with the GIL
    # held, it would stop for the whole call (one gap as long as the call).
    done = threading.Event()
    worker = threading.Thread(target=lambda: (model.encode(texts), done.set()))
    stamps = [time.perf_counter()]
    worker.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
    worker.join()
    call = stamps[-1] - stamps[0]
    longest_gap = max(b - a for a, b in zip(stamps, stamps[1:]))
    assert longest_gap < 0.5 * call, f"the main thread stalled {longest_gap:.3f}s of a {call:.3f}s call"
