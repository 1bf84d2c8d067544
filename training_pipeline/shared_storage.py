"""Copies of what the pipeline delivers (a day's datasets, training run records) on shared storage: any
fsspec URL, e.g. `s3://bucket/prefix`, `gs://…`, `abfs://…`, `sftp://host/path` or `file:///mnt/share`.

The pipeline itself works in its data root, a file system where a rename makes every write atomic and a
lock file serialises dispatches. Object stores have neither; what they do have is an upload that appears
whole or not at all. So a file is uploaded under a temporary name beside its target and then moved onto
it (a rename on file systems, a server-side copy on object stores): a reader never sees half a file under
its real name. Credentials come from the environment as each filesystem reads them (for S3: AWS_* and
AWS_ENDPOINT_URL), never from configuration.
"""

from __future__ import annotations

import posixpath
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


class SharedStorage:
    def __init__(self, url: str) -> None:
        # here, not at import: `public_url` is imported by every process that reads a file, and fsspec
        # brings asyncio with it
        import fsspec

        self.url = url.rstrip("/")
        self.fs, root = fsspec.core.url_to_fs(self.url)
        self.root = root.rstrip("/")

    def put_file(self, local: Path, *parts: str) -> str:
        """Upload `local` to `<url>/<parts...>`, replacing what was there; returns the file's URL."""
        target = posixpath.join(self.root, *parts)
        folder, name = posixpath.split(target)
        temporary = posixpath.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        self.fs.makedirs(folder, exist_ok=True)
        try:
            self.fs.put_file(str(local), temporary)
            self.fs.mv(temporary, target)
        except BaseException:
            if self.fs.exists(temporary):
                self.fs.rm(temporary)
            raise
        return self.location(*parts)

    def put_folder(self, local_dir: Path, *parts: str, last: str) -> list[str]:
        """Publish every file under `local_dir` (its subfolders too: a day's datasets in another format
        sit in `openai-chat/` and `parquet/`) to `<url>/<parts...>/`, with `last` (the file that says
        the folder is complete) taken down first and put back last, and files the folder no longer has
        removed: a reader that finds `last` finds the whole folder, and only it."""
        folder = posixpath.join(self.root, *parts)
        names = sorted(p.relative_to(local_dir).as_posix() for p in local_dir.rglob("*") if p.is_file())
        if last not in names:
            raise FileNotFoundError(f"{local_dir / last} is missing: the folder is not complete")
        marker = posixpath.join(folder, last)
        if self.fs.exists(marker):
            self.fs.rm(marker)
        urls = [self.put_file(local_dir / name, *parts, *name.split("/")) for name in names if name != last]
        self._remove_others(folder, set(names))
        urls.append(self.put_file(local_dir / last, *parts, last))
        return urls

    def _remove_others(self, folder: str, keep: set[str]) -> None:
        """Files under `folder` whose path relative to it is not in `keep`."""
        for path in self.fs.find(folder):
            if posixpath.relpath(path, folder) not in keep:
                self.fs.rm(path)

    def location(self, *parts: str) -> str:
        """The URL of `parts` here, fit to show (logs, metadata)."""
        return posixpath.join(public_url(self.url), *parts)


def public_url(url: str) -> str:
    """`url` without the user and password it may hold."""
    split = urlsplit(url)
    return urlunsplit(split._replace(netloc=split.netloc.rpartition("@")[2]))
