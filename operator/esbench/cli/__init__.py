"""The user's machine: the `esbench` command, `esbench run` with a local Elasticsearch, and
reading results from files or the current kube context."""
