"""The Rally Job pod (`esbench race`): runs esrally against a target, samples node stats,
turns race.json into results and reports them; the bundled tracks and their corpora."""
