package io.esbench.eckshim;

import java.io.IOException;
import java.util.Collection;
import java.util.List;

import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.reservedstate.ReservedClusterStateHandler;
import org.elasticsearch.reservedstate.ReservedClusterStateHandlerProvider;
import org.elasticsearch.reservedstate.TransformState;
import org.elasticsearch.xcontent.XContentParser;

/**
 * Empty reserved-state handlers named `ilm` and `slm`: ECK's file-based settings name them,
 * and without a handler of each name (x-pack-ilm and x-pack-slm, not in the minimal
 * distribution) Elasticsearch refuses the whole file and never turns ready. ECK writes no
 * policies there unless a StackConfigPolicy asks for them; these accept only none.
 */
public class NoLifecycleHandlers implements ReservedClusterStateHandlerProvider {
    @Override
    public Collection<ReservedClusterStateHandler<?>> handlers() {
        return List.of(new Empty("ilm"), new Empty("slm"));
    }

    record Empty(String name) implements ReservedClusterStateHandler<Object> {
        @Override
        public TransformState transform(Object source, TransformState previous) {
            if (source instanceof java.util.Map<?, ?> map && map.isEmpty() == false) {
                throw new IllegalArgumentException("the minimal distribution has no " + name + "; got " + map.keySet());
            }
            return previous;
        }

        // Part of the interface from 8.19's later patches on (an unused extra method before): nothing to remove.
        public ClusterState remove(TransformState previous) {
            return previous.state();
        }

        @Override
        public Object fromXContent(XContentParser parser) throws IOException {
            return parser.map();
        }
    }
}
