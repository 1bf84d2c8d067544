"""Export and trace files on any fsspec URL (`s3://bucket/traces/`, `gs://…`, `abfs://…`,
`sftp://host/path`, `https://host/export.jsonl`), read through a local mirror.

The readers need what a local folder gives: a listing that holds still while a day is read, and files
that can be opened again (a trace's spans may be in any file, so every trace file is read before the
first trajectory is put together, and each day of a backfill reads the folder again). So a URL is
mirrored first, into the cache folder: a file whose size and version stamp (ETag, generation or
modification time, whichever the filesystem reports) are those of the last mirror is not fetched again,
a changed or new one is downloaded under a temporary name and renamed into place, and a file the URL no
longer has leaves the mirror. A nightly run over a bucket of many days fetches only what is new. Runs
that mirror one URL at once take turns (a lock file), so a backfill's runs never see half a mirror.

Credentials come from the environment as each filesystem reads them (for S3: `AWS_*` and
`AWS_ENDPOINT_URL`), never from configuration; what is shown of a URL (logs, metadata, errors) has no
user or password (`public_url`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from training_pipeline.atomic import atomic_write_text
from training_pipeline.environment import cache_dir
from training_pipeline.shared_storage import public_url
from training_pipeline.trajectories.files import EXPORT_SUFFIXES, TRACE_SUFFIXES

__all__ = ["is_url", "local_input", "mirror", "mirror_folder"]

_MANIFEST = ".mirror.json"
_LOCK = ".mirror.lock"
#: what a filesystem's `info` may say about a file's version, in the order they are trusted
_STAMPS = (
    "ETag",
    "etag",
    "generation",
    "md5Hash",
    "LastModified",
    "last_modified",
    "mtime",
    "updated",
    "created",
)


def is_url(text: str) -> bool:
    """A URL with a scheme of its own (`s3://…`), not a local path; `file://` counts as local."""
    scheme = urlsplit(text).scheme
    return len(scheme) > 1 and scheme != "file" and "://" in text  # `C:\\…` is a path, not a scheme


def local_input(text: str) -> Path:
    """Where to read the input `text` from: itself as a path, a `file://` URL's path, or a remote URL's
    mirror, brought up to date now (`mirror`)."""
    if is_url(text):
        return mirror(text)
    if text.startswith("file://"):
        return Path(urlsplit(text).path)
    return Path(text)


def mirror_folder(url: str, root: Path | None = None) -> Path:
    """The folder `url` is mirrored into (whether or not it has been yet): one per URL, named by a
    digest of the URL without its credentials."""
    digest = hashlib.sha256(public_url(url).encode()).hexdigest()[:20]
    return (root or cache_dir() / "sources") / digest


def mirror(url: str, root: Path | None = None) -> Path:
    """`url`'s export and trace files in a local folder, as they are now (see the module's docstring);
    returns the folder, or the file when `url` names one file."""
    import fsspec

    shown = public_url(url)
    try:
        fs, base = fsspec.core.url_to_fs(url)
    except ImportError as err:  # the protocol's package (s3fs, gcsfs, adlfs, paramiko…) is not installed
        raise ValueError(f"cannot read {shown}: {err}") from None
    except ValueError as err:  # an unknown protocol
        raise ValueError(f"cannot read {shown}: {err}") from None
    try:
        listed, one_file = _listing(fs, base.rstrip("/"))
    except FileNotFoundError:
        raise FileNotFoundError(f"trajectory export path does not exist: {shown}") from None
    folder = mirror_folder(url, root)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / _LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run mirroring this URL finishes first
        _sync(fs, listed, folder)
    return folder / next(iter(listed)) if one_file else folder


def _listing(fs: Any, base: str) -> tuple[dict[str, tuple[str, str]], bool]:
    """{path relative to `base`: (remote path, version stamp)} of the export and trace files there, and
    whether `base` is one file (asked once: on an object store each question is a request)."""
    if fs.isfile(base):
        return {posixpath.basename(base): (base, _stamp(fs.info(base)))}, True
    if not fs.isdir(base):
        raise FileNotFoundError(base)
    found: dict[str, tuple[str, str]] = {}
    for path, info in fs.find(base, detail=True).items():
        relative = posixpath.relpath(path, base)
        name = posixpath.basename(relative)
        if info.get("type") != "file" or name.startswith("."):
            continue
        if posixpath.splitext(name)[1] in (*EXPORT_SUFFIXES, *TRACE_SUFFIXES):
            found[relative] = (path, _stamp(info))
    return found, False


def _stamp(info: Mapping[str, Any]) -> str:
    version = next((info[key] for key in _STAMPS if info.get(key) is not None), "")
    return f"{info.get('size')}:{version}"


def _sync(fs: Any, listed: dict[str, tuple[str, str]], folder: Path) -> None:
    manifest_path = folder / _MANIFEST
    try:
        manifest: dict[str, str] = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    for relative, (remote, stamp) in sorted(listed.items()):
        local = folder / relative
        if manifest.get(relative) == stamp and local.is_file():
            continue
        local.parent.mkdir(parents=True, exist_ok=True)
        temporary = local.with_name(f".{local.name}.part")
        try:
            fs.get_file(remote, str(temporary))
            os.replace(temporary, local)
        finally:
            temporary.unlink(missing_ok=True)
        manifest[relative] = stamp
        # kept as each file lands: a mirror stopped midway refetches only what it had not finished
        atomic_write_text(manifest_path, json.dumps(manifest, sort_keys=True))
    for relative in set(manifest) - set(listed):  # gone from the URL: gone from the mirror
        (folder / relative).unlink(missing_ok=True)
        del manifest[relative]
    for path in sorted(folder.rglob("*"), reverse=True):  # files no manifest names, folders left empty
        name = path.relative_to(folder).as_posix()
        if path.is_file() and name not in manifest and name not in (_MANIFEST, _LOCK):
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    atomic_write_text(manifest_path, json.dumps(manifest, sort_keys=True))
