"""A Hugging Face Space built from this repository: the torch it installs (ZeroGPU supports 2.8-2.11, the CPU pin is
2.13.0), the front matter, and what a sweep or a race asks of a ZeroGPU visitor's daily quota, said on the page."""
from __future__ import annotations

import re
from pathlib import Path

import gradio as gr
import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from specviz.limits import ZEROGPU_QUOTA_ANONYMOUS_S, ZEROGPU_QUOTA_FREE_S
from specviz.runtime import zerogpu
from specviz.strings import t
from specviz.ui import gpu_calls
from specviz.ui.tabs import classroom_race, sweep

ROOT = Path(__file__).resolve().parents[1]
ZEROGPU_TORCH = (Version("2.8"), Version("2.12"))   # ZeroGPU's PyTorch: 2.8 up to any 2.11.x
CPU_TORCH = Version("2.13.0")                          # CI's, the Docker image's and a fresh CPU install's


def front_matter() -> dict[str, str]:
    """The README's Space configuration (its top-level `key: value` lines)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert block, "README.md starts with the Space's front matter"
    return dict(line.split(":", 1) for line in block.group(1).splitlines() if ":" in line and not line.startswith(" "))


def torch_requirement(name: str) -> str:
    lines = [line.split("#")[0].strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines()]
    found = [line[len("torch"):].strip() for line in lines if re.match(r"torch\s*[=<>!~]", line)]
    assert len(found) == 1, (name, found)
    return found[0]


def test_the_space_installs_a_torch_zerogpu_supports_and_a_cpu_install_keeps_its_pin():
    meta = {k.strip(): v.strip().strip('"') for k, v in front_matter().items()}
    assert meta["sdk"] == "gradio" and (ROOT / meta["app_file"]).is_file()
    assert f"gradio=={meta['sdk_version']}" in (ROOT / "requirements.txt").read_text(encoding="utf-8")
    # A Space installs pre-requirements.txt first, then requirements.txt (only those two: the front matter cannot
    # name another file). The Space's torch is the one pre-requirements.txt pins ...
    pinned = torch_requirement("pre-requirements.txt")
    assert pinned.startswith("==")
    space = Version(pinned[2:])
    assert ZEROGPU_TORCH[0] <= space < ZEROGPU_TORCH[1]
    # ... which requirements.txt keeps (pip leaves a requirement already met alone), while a fresh install anywhere
    # else gets the newest it allows: the CPU pin, and nothing past it.
    allowed = SpecifierSet(torch_requirement("requirements.txt"))
    assert space in allowed and CPU_TORCH in allowed
    assert Version("2.13.1") not in allowed and Version("2.14.0") not in allowed
    assert Version("2.13.0+cpu") in allowed                  # PyTorch's CPU wheel of the same version
    assert Version("2.7.1") not in allowed                   # below what the CPU suite ran on


SWEEP_DEFAULT = {**sweep.DEFAULTS, "pair": "qwen2.5-0.5b-7b", "draft_id": "", "target_id": ""}
RACE_DEFAULT = {"race_tokens": classroom_race.DEFAULT_TOKENS, "race_k": classroom_race.DEFAULT_K,
                "pair": "qwen2.5-0.5b-7b", "draft_id": "", "target_id": ""}


@pytest.fixture
def zero_gpu(monkeypatch):
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    monkeypatch.delenv("SPECVIZ_ZEROGPU_SIZE", raising=False)
    monkeypatch.setattr(zerogpu, "STEPS", zerogpu.StepClock())   # nothing measured: the step the first call asks at


def test_what_a_default_generate_sweep_and_race_ask_of_the_quota(zero_gpu):
    """The README's figures: the durations the calls ask for before any step was measured, times `large`'s factor."""
    step = zerogpu.STEPS.step_seconds(None)
    run = gpu_calls.request_of({"max_new": 64, "k": 3, "lookup_k": 0, "compare_switch": True})
    sweep_req, race_req = gpu_calls.request_of(SWEEP_DEFAULT), gpu_calls.request_of(RACE_DEFAULT)
    assert [zerogpu.duration(r, step) for r in (run, sweep_req, race_req)] == [41, 98, 111]
    assert [zerogpu.quota_seconds(r, step) for r in (run, sweep_req, race_req)] == [62, 147, 166]
    assert zerogpu.quota_seconds(sweep_req, step, "xlarge") == 196
    # Measured steps shrink it: a 7B target's graphs step is far under the pessimistic default.
    assert zerogpu.quota_seconds(sweep_req, 0.02) < zerogpu.quota_seconds(sweep_req, step)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_a_zero_gpu_visitor_reads_what_a_sweep_and_a_race_ask_of_their_quota(zero_gpu, lang):
    note = gpu_calls.quota_note(SWEEP_DEFAULT, lang)
    assert note == t("zerogpu.quota_sweep", lang, time="2 min 27 s", anon="2 min", free="5 min")
    assert ZEROGPU_QUOTA_ANONYMOUS_S == 120 and ZEROGPU_QUOTA_FREE_S == 300
    assert gpu_calls.quota_note(RACE_DEFAULT, lang) == t("zerogpu.quota_race", lang, time="2 min 46 s", anon="2 min",
                                                           free="5 min")
    # a small sweep asks for little: nothing to say
    assert gpu_calls.quota_note({**SWEEP_DEFAULT, "k_lo": 2, "k_hi": 2, "sweep_tokens": 4}, lang) == ""
    # on the page, beside the buttons, from the form's own starting values
    with gr.Blocks():
        with gr.Tabs():
            tab = sweep.tab(lang)
        race = classroom_race.race_layout(lang)
    assert note in tab["sweep_quota"].value and "2 min 46 s" in race["race_quota"].value
    # and it follows the fields
    assert "2 min 27 s" not in sweep.quota(_Ctx(lang), {**SWEEP_DEFAULT, "k_hi": 16})["sweep_quota"]


class _Ctx:
    def __init__(self, lang):
        self.lang = lang


def test_off_zero_gpu_nothing_is_said_and_the_page_has_no_note(monkeypatch):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert gpu_calls.quota_note(SWEEP_DEFAULT, "en") == gpu_calls.quota_note(RACE_DEFAULT, "en") == ""
    with gr.Blocks():
        with gr.Tabs():
            tab = sweep.tab("en")
        race = classroom_race.race_layout("en")
    assert "sweep_quota" not in tab and "race_quota" not in race


def test_a_stretch_of_quota_in_words():
    assert [gpu_calls.quota_time(s) for s in (45, 60, 147, 300)] == ["45 s", "1 min", "2 min 27 s", "5 min"]
