package io.esbench.rootendpoint;

import java.util.List;
import java.util.function.Supplier;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.node.Node;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * `GET /` as the default distribution answers it (its rest-root module, not in the minimal
 * distribution from 8.19 on): Rally reads the version from it and fails without it; ECK reads the
 * cluster's UUID from it to note that the cluster has formed.
 */
public class MainInfo extends BaseRestHandler {
    private final String nodeName;
    private final String clusterName;
    private final Supplier<String> clusterUuid;

    public MainInfo(Settings settings, Supplier<String> clusterUuid) {
        this.nodeName = Node.NODE_NAME_SETTING.get(settings);
        this.clusterName = ClusterName.CLUSTER_NAME_SETTING.get(settings).value();
        this.clusterUuid = clusterUuid;
    }

    @Override
    public String getName() {
        return "esbench_root_endpoint";
    }

    @Override
    public List<Route> routes() {
        return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
    }

    @Override
    protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
        Build build = Build.current();
        return channel -> {
            XContentBuilder body = channel.newBuilder();
            body.startObject()
                .field("name", nodeName)
                .field("cluster_name", clusterName)
                .field("cluster_uuid", clusterUuid.get())
                .startObject("version")
                .field("number", build.qualifiedVersion())
                .field("build_flavor", build.flavor())
                .field("build_type", build.type().displayName())
                .field("build_hash", build.hash())
                .field("build_date", build.date())
                .field("build_snapshot", build.isSnapshot())
                .field("lucene_version", org.apache.lucene.util.Version.LATEST.toString())
                .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
                .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
                .endObject()
                .field("tagline", "You Know, for Search")
                .endObject();
            channel.sendResponse(new RestResponse(RestStatus.OK, body));
        };
    }
}
