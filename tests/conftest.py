"""Shared test set-up: tiny models importable as `tiny`, markers registered."""
import gc
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach for the Hub
# The packaged pair on PyTorch's default kernels: its weights stay memory-mapped, so the several
# test modules (and app processes) that load it share one page cache. The oneDNN path copies them
# into 8 GB of packed memory per load; tests/test_models_quant_kernels.py loads it there explicitly, once.
os.environ.setdefault("SPECVIZ_CPU_LINEAR", "default")
# The packaged pair's target loads as the app loads it (auto: its GGUF's own 4-bit tensors in specviz's kernels,
# ~1.5 GB); an as-loaded fp32 target is dequantized in memory (6 GB) only by the tests that name that precision.


def pytest_addoption(parser):
    parser.addoption("--real-pair", choices=("run", "skip", "only"), default="run",
                     help="the real-pair tests (tests/isolated.py): run them with the rest (default), skip them, or "
                          "run only them (CI: the rest on two workers, then these alone)")


def pytest_configure(config):
    config.addinivalue_line("markers", "real_model: loads the packaged Qwen2.5-Coder pair (slow on a CPU)")
    config.addinivalue_line("markers", "statistical: 20,000 samples per case, batched through the decoder's own round (seconds)")
    config.addinivalue_line("markers", "browser: drives Debian's Chromium with Playwright")


@pytest.fixture(scope="session")
def tiny_pair():
    from tiny import tiny_model

    return tiny_model(1), tiny_model(2, scale=0.7)


@pytest.fixture(scope="session")
def ext():
    """specviz's compiled CPU kernels (models.quant.q4a8), or the test skips where they cannot be built here."""
    from specviz.models.quant import q4a8

    why = q4a8.unavailable()
    if why is not None:
        pytest.skip(f"q4a8 kernels unavailable here: {why}")
    return q4a8.extension()


@pytest.fixture
def on_every_isa_and_thread_count():
    """`run(layer, x)`: layer(x) on every instruction set the kernels support here, at 1 and 2 threads each (the
    process's instruction set and thread count restored after), as a list of outputs."""
    import torch

    from specviz.models.quant import q4a8

    def run(layer, x) -> list:
        outs, threads = [], torch.get_num_threads()
        try:
            for name in q4a8.supported_isas():
                with q4a8.isa_forced(name):
                    for t in (1, 2):
                        torch.set_num_threads(t)
                        outs.append(layer(x))
        finally:
            torch.set_num_threads(threads)
        return outs
    return run


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on a shared 2-core machine: a second thread only adds contention (5-10x slower here).
    A module opts in with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def all_threads():
    """Torch's own thread count for one test, in a module that otherwise runs on one thread: a real-pair test runs
    alone in its child process (tests/isolated.py), where a second core is free and halves its time."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def collect_pairs_between_tests():
    """In a real-pair child process (tests/isolated.py), collect garbage after each test: a test that loaded a pair
    of its own leaves it to the collector (transformers' modules hold reference cycles), and the next test's load
    then mapped another ~8 GB beside it. Measured on the 2-core Zen 3: test_models_quant_weights' four precision
    loads 176 -> 115 s (int4's test 56 -> 22 s: the page cache no longer thrashed), the child's peak 6.9 GB."""
    yield
    if os.environ.get("SPECVIZ_TEST_CHILD"):
        gc.collect()


@pytest.fixture(scope="session")
def pair_auto():
    """The packaged pair exactly as `python app.py` loads it (every choice "auto": on a CPU a quantized, row-invariant
    target). The as-loaded defaults above are lifted for its load; the modules that ask for it run in their own
    child process (tests/isolated.py), so its quantized copy costs no other test memory."""
    from specviz.models.loading import ModelLoadError, load_pair
    from specviz.models.quant.kernels import ENV_VAR
    from specviz.models.quant.weights import TARGET_ENV_VAR

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV_VAR, raising=False)
        mp.delenv(TARGET_ENV_VAR, raising=False)
        try:
            return load_pair()
        except ModelLoadError as e:
            pytest.skip(f"packaged model pair unavailable: {e}")


@pytest.fixture(scope="module")
def app():
    """The app on tiny models, served in-process for one test module (the API's and the pages' tests): its URL."""
    from tests.browser.tiny_app import serve

    demo, url = serve(delay=0.0, replay_delay=0.0)
    yield url
    demo.close()


@pytest.hookimpl(optionalhook=True)   # pytest-xdist's hook: only called where it runs the suite (`-n 2`)
def pytest_xdist_make_scheduler(config, log):
    """The suite on two workers (CI's two cores): a test module goes to one worker whole (its module fixtures, a
    browser's server and Chromium, start once), and every real-pair item to the same worker, one after another
    (tests/isolated.py: one loaded pair at a time, CI's peak memory)."""
    from isolated import real_pair_scheduler

    return real_pair_scheduler(config, log)


@pytest.hookimpl(trylast=True)   # after -m and -k have chosen: the children run exactly what was chosen
def pytest_collection_modifyitems(session, config, items):
    """The real-pair tests run in child processes, one per module (tests/isolated.py: CI's peak memory)."""
    from isolated import isolate

    isolate(session, config, items)
