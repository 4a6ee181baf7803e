"""What runs beside Elasticsearch in its pods: the server of the profiler's recordings."""
