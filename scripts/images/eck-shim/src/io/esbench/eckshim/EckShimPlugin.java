package io.esbench.eckshim;

import java.util.List;
import java.util.function.Supplier;

import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;

/**
 * The node shutdown API as ECK reads it, for the minimal distribution, which lacks the
 * x-pack-shutdown module: no node is ever being shut down. ECK only reads it while it
 * creates a cluster; esbench never scales a running cluster down, which would need the rest.
 */
public class EckShimPlugin extends Plugin implements ActionPlugin {
    @Override
    public List<RestHandler> getRestHandlers(Settings settings, RestController restController,
            ClusterSettings clusterSettings, IndexScopedSettings indexScopedSettings, SettingsFilter settingsFilter,
            IndexNameExpressionResolver indexNameExpressionResolver, Supplier<DiscoveryNodes> nodesInCluster) {
        return List.of(new NoNodeShutdowns());
    }

    static class NoNodeShutdowns extends BaseRestHandler {
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
}
