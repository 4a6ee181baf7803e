package io.esbench.eckshim;

import java.util.List;

import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;

/**
 * The node shutdown API as ECK reads it, for the minimal distribution, which lacks the
 * x-pack-shutdown module: no node is ever being shut down. ECK only reads it while it
 * creates a cluster; esbench never scales a running cluster down, which would need the rest.
 */
public class NoNodeShutdowns extends BaseRestHandler {
    @Override
    public String getName() {
        return "esbench_eck_shim_node_shutdowns";
    }

    @Override
    public List<Route> routes() {
        return List.of(new Route(RestRequest.Method.GET, "/_nodes/shutdown"),
            new Route(RestRequest.Method.GET, "/_nodes/{nodeId}/shutdown"));
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
        return channel -> channel.sendResponse(new RestResponse(RestStatus.OK, "application/json", "{\"nodes\":[]}"));
    }
}
