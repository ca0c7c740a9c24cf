"""What ``submit`` ships as the job's working folder: the folder less version control, virtual
environments, build folders, caches and the job's own output, zipped as Ray zips it (its own
packaging, so the listing and the size are those Ray uploads), and refused before the upload
when it is over Ray's limit, naming the largest folders."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# gitwildmatch patterns, as runtime_env's "excludes" reads them: a name without a slash
# matches at any depth.
DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "build",
    "build-*",
    "dist",
    "__pycache__",
    "*.pyc",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".tox",
    "node_modules",
    "*.egg-info",
)


class PackageError(ValueError):
    """The working folder cannot be shipped (too large, or not a folder)."""


@dataclass(frozen=True)
class Package:
    """The working folder as it will be uploaded."""

    directory: str
    excludes: tuple[str, ...]
    files: tuple[str, ...]  # paths relative to the folder, as in the zip
    file_bytes: int  # their size uncompressed
    zip_bytes: int  # the upload's size


def _virtual_environments(root: Path) -> list[str]:
    """Folders below ``root`` holding a pyvenv.cfg (virtual environments by any name), as
    patterns anchored at the working folder."""
    found = []
    for current, folders, files in os.walk(root):
        if "pyvenv.cfg" in files and Path(current) != root:
            found.append("/" + Path(current).relative_to(root).as_posix())
            folders.clear()
            continue
        folders[:] = [f for f in folders if f not in (".git", "node_modules")]
    return found


def excludes_for(
    directory: str, output: str | None, extra: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """The excludes of a job's working folder: the defaults, virtual environments, the
    output folder when it lies inside, and the user's own."""
    root = Path(directory).resolve()
    patterns = list(DEFAULT_EXCLUDES) + _virtual_environments(root)
    if output:
        out = Path(output).resolve()
        if out.is_relative_to(root) and out != root:
            patterns.append("/" + out.relative_to(root).as_posix())
    patterns += list(extra)
    return tuple(dict.fromkeys(patterns))


def size_limit() -> int:
    """Ray's limit on an uploaded package (its gRPC message size, RAY_max_grpc_message_size)."""
    from ray._private.runtime_env.packaging import GCS_STORAGE_MAX_SIZE

    return int(GCS_STORAGE_MAX_SIZE)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def plan_package(directory: str, excludes: tuple[str, ...]) -> Package:
    """Zips the folder as Ray will (its packaging, honouring .gitignore and .rayignore as it
    does) and returns what is in it; PackageError when it is over Ray's limit."""
    from ray._private.ray_constants import RAY_RUNTIME_ENV_IGNORE_GITIGNORE
    from ray._private.runtime_env.packaging import create_package

    root = Path(directory)
    if not root.is_dir():
        raise PackageError(f"the working folder {directory} is not a folder")
    include_gitignore = os.environ.get(RAY_RUNTIME_ENV_IGNORE_GITIGNORE, "0") != "1"
    with tempfile.TemporaryDirectory(prefix="rayorch-package-") as scratch:
        target = Path(scratch) / "package.zip"
        create_package(
            str(root),
            target,
            include_gitignore=include_gitignore,
            excludes=list(excludes),
            logger=None,
        )
        zip_bytes = target.stat().st_size
        with zipfile.ZipFile(target) as archive:
            infos = [i for i in archive.infolist() if not i.is_dir()]
    files = tuple(sorted(i.filename for i in infos))
    file_bytes = sum(i.file_size for i in infos)
    package = Package(str(root), excludes, files, file_bytes, zip_bytes)
    limit = size_limit()
    if zip_bytes >= limit:
        by_folder: Counter[str] = Counter()
        for info in infos:
            top = info.filename.split("/", 1)
            by_folder[top[0] + ("/" if len(top) > 1 else "")] += info.file_size
        largest = ", ".join(f"{name} {_mib(size)}" for name, size in by_folder.most_common(5))
        raise PackageError(
            f"the working folder {directory} zips to {_mib(zip_bytes)}, over Ray's limit of "
            f"{_mib(limit)} for an uploaded package; the largest parts: {largest}. Exclude "
            "what the job does not need (--exclude PATTERN, or a .rayignore file), or put "
            "large data where the cluster reads it (a shared store) and pass its path"
        )
    return package
