"""The key that keeps redacted trajectory ids apart.

`strict` redacts personal data in a trajectory's id as anywhere else (`session-+14155550123-2` becomes
`session-<PII:PHONE_NUMBER:1>-2`), and two people's ids would then be one: the datasets' ids files would
name their conversations as one trajectory, and a split by trajectory (`training.holdout`,
`optimizers.examples`) could not part them (an agent on a messaging platform, whose ids are
`whatsapp:+…`, would have one trajectory a day). So an id the filter changed gets a suffix: the
HMAC-SHA256 of the id as it came, under the deployment's key, 16 hexadecimal characters.

Without the key the suffix tells nothing of the id (a phone number can be guessed, an HMAC under an
unknown key cannot be tested against the guesses); with it, an id gets the same suffix every day, in
every process and on every run, so materialising a day again changes nothing and an id's trajectory
is one group across days.

The key is `TRAINING_PIPELINE_ID_KEY`, else one made once in the data folder (`keys/trajectory-id.key`,
32 random bytes, readable by its owner only): never beside the datasets, never copied to shared
storage. A deployment whose processes do not share the data folder sets the variable.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

__all__ = ["KEY_FILE", "apart", "detached", "filter_key", "load_id_key"]

#: where the data folder keeps the key made for it
KEY_FILE = Path("keys") / "trajectory-id.key"
#: the shortest key taken: a short one could be guessed, and the suffixes tested against the guesses
_SHORTEST = 32


def apart(redacted: str, original: str, key: bytes) -> str:
    """`redacted` (the filter's version of `original`) with `original`'s keyed suffix."""
    digest = hmac.new(key, original.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"{redacted}~{digest[:16]}"


#: what `apart` appends
_SUFFIX = re.compile(r"~[0-9a-f]{16}\Z")


def detached(trajectory_id: str) -> str:
    """`trajectory_id` without a suffix `apart` appended. A stored id is filtered again without its
    suffix: after a word such as `auth-` the rules would take its sixteen random characters for a
    token."""
    match = _SUFFIX.search(trajectory_id)
    return trajectory_id[: match.start()] if match else trajectory_id


def filter_key(profile: str, configured: str | None, data: Path | None) -> bytes | None:
    """The key a filter of `profile` keeps redacted ids apart with (`load_id_key`): only `strict`
    changes ids (elizaOS's filter reads the prompts alone); None, too, with neither a configured key
    nor a data folder to keep one in."""
    if profile != "strict" or (not configured and data is None):
        return None
    return load_id_key(configured, data or Path("."))


def load_id_key(configured: str | None, data: Path) -> bytes:
    """The configured key, else the data folder's (made now when it has none: two processes making it
    at once end with one key, the first one linked into place)."""
    if configured:
        if len(configured) < _SHORTEST:
            raise ValueError(
                f"TRAINING_PIPELINE_ID_KEY must be {_SHORTEST} characters or more "
                "(`openssl rand -hex 32` makes one)"
            )
        return configured.encode("utf-8")
    path = data / KEY_FILE
    with contextlib.suppress(FileNotFoundError):
        return _read(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process made one first: theirs holds
        except OSError:  # a filesystem without hard links (some network and FUSE mounts)
            if not path.exists():
                os.replace(draft, path)  # two processes at once there: the last one's holds
    finally:
        draft.unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> bytes:
    key = path.read_text(encoding="ascii").strip()
    if len(key) < _SHORTEST:
        raise ValueError(f"{path} holds no key ({_SHORTEST} characters or more); delete it to make one")
    return key.encode("ascii")
