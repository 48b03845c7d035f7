"""Where a model comes from: a Hub id (checked, with one quick metadata call) or a local folder.

Errors a user can cause or fix (a typo in an id, no network, a gated repo, a
folder that is not a model) surface as one ``ModelLoadError`` in a sentence,
before minutes of loading.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelLoadError, role as role_word

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- #
# Hub ids and local folders
# --------------------------------------------------------------------------- #

# Hub rules: owner and name use letters, digits, '-', '_', '.'; neither starts or
# ends with '-' or '.'; '--' and '..' are reserved.
_ID_PART = r"[A-Za-z0-9_](?:[\w.\-]*[A-Za-z0-9_])?"
_ID_RE = re.compile(rf"^{_ID_PART}(?:/{_ID_PART})?$", re.ASCII)


def validate_model_id(s: str) -> str:
    """Return the stripped Hub id ``owner/name`` (or ``name``), or raise ModelLoadError."""
    if not isinstance(s, str):
        raise ModelLoadError(f"model id must be a string, got {type(s).__name__}")
    sid = s.strip()
    if not sid:
        raise ModelLoadError("model id is empty; give a Hub id like Qwen/Qwen2.5-0.5B-Instruct")
    if len(sid) > 200 or not _ID_RE.match(sid) or ".." in sid or "--" in sid:
        raise ModelLoadError(
            f"invalid model id {s.strip()[:80]!r}: expected a Hub id like Qwen/Qwen2.5-0.5B-Instruct "
            f"(letters, digits, '-', '_', '.', one '/')"
        )
    return sid


def looks_like_path(s: str) -> bool:
    """Hub ids never start with '/', '.', '~' and hold at most one '/'; paths may."""
    return (s.startswith(("/", ".", "~", "\\")) or "\\" in s or s.count("/") > 1
            or (len(s) > 1 and s[1] == ":"))  # Windows drive letter


@dataclass(frozen=True)
class Source:
    ref: str            # what from_pretrained gets: a Hub id or an absolute folder
    is_local: bool
    local_files_only: bool = False


def resolve_source(spec: str, role: str, allow_local: bool) -> Source:
    """Decide whether ``spec`` is a local folder or a Hub id, and check it early."""
    if not isinstance(spec, str) or not spec.strip():
        raise ModelLoadError(key="load.empty", role=role_word(role))
    spec = spec.strip()
    expanded = Path(spec).expanduser()
    if expanded.is_dir() or looks_like_path(spec):
        if not allow_local:
            # from_pretrained prefers a matching local folder over a Hub id, so a
            # page user could otherwise read server folders by naming them.
            raise ModelLoadError(key="load.no_folders", role=role_word(role), spec=repr(spec)[:80])
        if not expanded.is_dir():
            raise ModelLoadError(f"{role} model folder {spec} does not exist")
        if not (expanded / "config.json").is_file():
            raise ModelLoadError(f"{role} model folder {spec} is not a model (no config.json)")
        return Source(str(expanded.resolve()), True)
    repo_id = validate_model_id(spec)
    return Source(repo_id, False, _hub_preflight(repo_id, role))


def _hub_preflight(repo_id: str, role: str) -> bool:
    """One quick metadata call before from_pretrained; return True to load from cache only.

    Without it, an offline from_pretrained retries with backoff for ~25 s before
    failing with a generic OSError.  Here: unknown ids, gated repos and an
    unreachable Hub are told apart in well under a second.
    """
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    cached = isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    if constants.HF_HUB_OFFLINE:
        if not cached:
            raise ModelLoadError(key="load.offline", role=role_word(role), repo=repo_id)
        return True
    try:
        HfApi().model_info(repo_id, timeout=float(os.environ.get("SPECVIZ_HUB_TIMEOUT", "10")))
    except GatedRepoError:
        if cached:
            return True
        raise ModelLoadError(key="load.gated", role=role_word(role), repo=repo_id) from None
    except RepositoryNotFoundError:
        raise ModelLoadError(key="load.not_found", role=role_word(role), repo=repo_id) from None
    except HfHubHTTPError as e:
        if cached:
            return True
        status = getattr(getattr(e, "response", None), "status_code", "?")
        raise ModelLoadError(key="load.http", status=status, role=role_word(role), repo=repo_id) from None
    except Exception as e:  # connection refused, DNS failure, timeout, proxy...
        if cached:
            return True
        log.warning("cannot reach %s for %s: %s: %s", constants.ENDPOINT, repo_id, type(e).__name__, str(e)[:200])
        raise ModelLoadError(key="load.unreachable", endpoint=constants.ENDPOINT, role=role_word(role),
                             repo=repo_id) from None
    return False
