"""torch.hub, offline: what works without a network works as torch's does.

- ``get_dir``/``set_dir``: torch's cache directory (``$TORCH_HOME/hub``, else
  ``$XDG_CACHE_HOME/torch/hub``, else ``~/.cache/torch/hub``), so files torch downloaded are found.
- ``load_state_dict_from_url``: the file in ``<model_dir or hub dir/checkpoints>/<file name>`` when
  it is there (a torch.save file or a gradviz one), as torch takes a cached file; a ``file://`` URL
  is copied there first, as torch's urlopen does.
- ``download_url_to_file``: ``file://`` URLs only.
- ``load``/``list``/``help``: ``source="local"`` (a directory holding ``hubconf.py``), and a GitHub
  repository already in the cache (``<hub dir>/<owner>_<repo>_<ref>``).
Anything that needs the network fails with one line that says where to put the file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import types
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from gradviz import serialization

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

_hub_dir: str | None = None
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # torch's: the hash prefix in a checkpoint's file name


class HubOfflineError(RuntimeError):
    """A torch.hub call that needs the network: gradviz downloads nothing."""


def get_dir() -> str:
    if _hub_dir is not None:
        return _hub_dir
    torch_home = os.path.expanduser(
        os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch"))
    )
    return os.path.join(torch_home, "hub")


def set_dir(d: str | os.PathLike[str]) -> None:
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    parts = urlparse(url)
    if parts.scheme != "file":
        raise HubOfflineError(f"gradviz has no network access: cannot download {url}; put the file at {dst}")
    shutil.copyfile(url2pathname(parts.path), dst)
    if hash_prefix is not None:
        with open(dst, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        if not digest.startswith(hash_prefix):
            os.remove(dst)
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        if urlparse(url).scheme != "file":
            raise HubOfflineError(
                f"gradviz has no network access: {url} is not cached; put the file at {cached_file}"
            )
        os.makedirs(model_dir, exist_ok=True)
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    return serialization.load(cached_file, map_location=map_location, weights_only=weights_only)


def _repo_dir(repo_or_dir: str, source: str) -> str:
    if source == "local":
        return repo_or_dir
    if source != "github":
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    owner_repo, _, ref = repo_or_dir.partition(":")
    owner, _, repo = owner_repo.partition("/")
    candidates = [ref] if ref else ["main", "master"]
    for r in candidates:
        d = os.path.join(get_dir(), f"{owner}_{repo}_{r.replace('/', '_')}")
        if os.path.isdir(d):
            return d
    raise HubOfflineError(
        f"gradviz has no network access: {repo_or_dir} is not in the hub cache ({get_dir()}); "
        "use source='local' with a checkout"
    )


def _hubconf(repo_dir: str) -> types.ModuleType:
    path = os.path.join(repo_dir, "hubconf.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"Cannot find hubconf.py in {repo_dir}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_dir)  # hubconf imports its repository's modules, as torch lets it
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    return module


def _entry(module: types.ModuleType, model: str) -> Any:
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo: Any = None,  # noqa: A001
         verbose: bool = True) -> list[str]:
    module = _hubconf(_repo_dir(github, "github" if not os.path.isdir(github) else "local"))
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = None) -> str | None:
    return _entry(_hubconf(_repo_dir(github, "github" if not os.path.isdir(github) else "local")), model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs: Any) -> Any:
    return _entry(_hubconf(_repo_dir(repo_or_dir, source.lower())), model)(*args, **kwargs)
