#!/usr/bin/env python3
"""Packs root filesystem layers into an OCI image archive, without a registry.

There is no container registry on the test machines, so images are built as plain folders
(mmdebstrap + files) and packed here into an OCI layout tar that `ctr images import` takes.
The image is named in the archive (annotation io.containerd.image.name) as docker.io/local/NAME:TAG,
because the CRI normalises `local/NAME:TAG` in a pod spec to exactly that.

Each layer is an uncompressed tar made by GNU tar with sorted names, fixed mtimes and numeric
owners: the same folder always gives the same layer digest, and import skips compression work.
A layer is given as a folder (packed here) or as a tar packed earlier (`oci-pack.py layer`), so
that a script can cache the layers that rarely change; lowest first. A layer folder holds what
it adds or changes; deletions (whiteouts) are not supported.

Usage: oci-pack.py --layer DIR|LAYER.tar [--layer ...] --name docker.io/local/NAME:TAG --out FILE.tar
                   [--entrypoint JSON] [--cmd JSON] [--user U:G] [--workdir DIR] [--env K=V ...]
       oci-pack.py layer DIR LAYER.tar
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def make_layer(rootfs: Path, out: Path) -> None:
    # /dev, /proc and /sys are provided by the runtime at run time; their build-time contents
    # (device nodes made by mmdebstrap) have no business in an image.
    subprocess.run(
        ["tar", "--create", "--file", str(out), "--directory", str(rootfs),
         "--sort=name", "--mtime=@0", "--numeric-owner", "--format=posix",
         "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
         "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "."],
        check=True)


def main() -> None:
    if sys.argv[1:2] == ["layer"]:
        folder, out = map(Path, sys.argv[2:])
        tmp_out = out.with_name(out.name + ".tmp")
        make_layer(folder, tmp_out)
        os.replace(tmp_out, out)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layer", type=Path, action="append", required=True, help="a folder or a packed layer tar")
    parser.add_argument("--name", required=True, help="full image name, e.g. docker.io/local/esbench:0.1.0")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--entrypoint", type=json.loads, default=None)
    parser.add_argument("--cmd", type=json.loads, default=None)
    parser.add_argument("--user", default="")
    parser.add_argument("--workdir", default="")
    parser.add_argument("--env", action="append", default=[])
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.out.parent) as scratch:
        layers = []
        for number, given in enumerate(args.layer):
            if given.is_dir():
                packed = Path(scratch) / f"layer{number}.tar"
                make_layer(given, packed)
                given = packed
            layers.append((given, sha256_file(given)))

        config: dict = {"Env": args.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
        if args.entrypoint is not None:
            config["Entrypoint"] = args.entrypoint
        if args.cmd is not None:
            config["Cmd"] = args.cmd
        if args.user:
            config["User"] = args.user
        if args.workdir:
            config["WorkingDir"] = args.workdir
        image_config = json.dumps({
            "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z", "config": config,
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{digest}" for _, digest in layers]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": f"scripts/images ({layer.name}, oci-pack.py)"}
                        for layer, _ in layers],
        }, sort_keys=True).encode()
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": f"sha256:{hashlib.sha256(image_config).hexdigest()}", "size": len(image_config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": f"sha256:{digest}", "size": layer.stat().st_size} for layer, digest in layers],
        }, sort_keys=True).encode()
        tag = args.name.rsplit(":", 1)[1]
        index = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "digest": f"sha256:{hashlib.sha256(manifest).hexdigest()}", "size": len(manifest),
                           "annotations": {"io.containerd.image.name": args.name,
                                           "org.opencontainers.image.ref.name": tag}}],
        }, sort_keys=True).encode()

        tmp_out = args.out.with_name(args.out.name + ".tmp")
        with tarfile.open(tmp_out, "w", format=tarfile.PAX_FORMAT) as archive:
            def add_bytes(name: str, data: bytes) -> None:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            add_bytes("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            add_bytes("index.json", index)
            add_bytes(f"blobs/sha256/{hashlib.sha256(manifest).hexdigest()}", manifest)
            add_bytes(f"blobs/sha256/{hashlib.sha256(image_config).hexdigest()}", image_config)
            for layer, digest in layers:
                archive.add(layer, arcname=f"blobs/sha256/{digest}")
        # Rename last: an interrupted build never leaves an archive that looks finished.
        os.replace(tmp_out, args.out)
    print(args.out)


if __name__ == "__main__":
    main()
