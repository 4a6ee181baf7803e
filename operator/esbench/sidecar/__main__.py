"""The sidecar of an Elasticsearch pod: python -m esbench.sidecar --data DIR --password-file FILE ...

Its own entry point, not a command of the esbench CLI: the CLI imports the runner and the analysis,
many times the CPU of this server's imports, and the container runs under a small CPU limit.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from esbench.sidecar import nodeserver


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m esbench.sidecar", description=(
        "Serve what an Elasticsearch node does not report itself, read-only: its probe (GET /probe) and, "
        "with --recordings, the profiler's finished recordings (GET /recordings)."))
    parser.add_argument("--data", required=True, type=Path, help="the node's path.data (its volume, mounted read-only)")
    parser.add_argument("--recordings", type=Path, help="where the profiler writes its recordings, in a profiled cluster")
    parser.add_argument("--port", type=int, default=9443)
    parser.add_argument("--password-file", required=True, type=Path,
                        help="the elastic user's password, which a request must send (basic auth)")
    parser.add_argument("--certificate", type=Path, help="serve HTTPS with this certificate chain (the cluster's HTTP certificate) ...")
    parser.add_argument("--key", type=Path, help="... and its key")
    args = parser.parse_args(argv)
    if (args.certificate is None) != (args.key is None):
        parser.error("--certificate and --key go together")
    nodeserver.serve(args.data, args.port, args.password_file, args.recordings, args.certificate, args.key)


if __name__ == "__main__":
    main()
