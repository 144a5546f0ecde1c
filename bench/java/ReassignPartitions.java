// Kafka's own AdminClient reassigning every partition of `topic` through the broker at
// `bootstrap`: each partition keeps its first replica (its leader stays) and moves its other
// replicas to the brokers that hold none of it, all in one alterPartitionReassignments call
// (KIP-455, forwarded by the broker to the controller). Then it lists the reassignments until
// none is left (the controller completed every one: the new replicas caught up and joined the
// ISR, the old ones were removed), and describes the topic from that broker until every
// partition names the new replicas, all in sync. Run by bench.real_cluster_failover with the
// pinned Kafka jars on the class path (Java's single-file source launcher: no build step).
// Prints one line, "ReassignPartitions" and a JSON object, times in ms from the call.

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

public class ReassignPartitions {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "120000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "300000");
        try (Admin admin = Admin.create(props)) {
            List<Integer> brokers = new ArrayList<>();
            for (Node node : admin.describeCluster().nodes().get()) brokers.add(node.id());
            TopicDescription described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
            Map<TopicPartition, List<Integer>> target = new HashMap<>();
            for (TopicPartitionInfo p : described.partitions()) {
                List<Integer> now = new ArrayList<>();
                for (Node replica : p.replicas()) now.add(replica.id());
                List<Integer> spare = new ArrayList<>(brokers);
                spare.removeAll(now);
                if (spare.size() < now.size() - 1) throw new IllegalStateException("too few brokers to move to");
                List<Integer> wanted = new ArrayList<>(List.of(now.get(0)));
                wanted.addAll(spare.subList(0, now.size() - 1));
                TopicPartition tp = new TopicPartition(topic, p.partition());
                moves.put(tp, Optional.of(new NewPartitionReassignment(wanted)));
                target.put(tp, wanted);
            }
            long began = System.nanoTime();
            admin.alterPartitionReassignments(moves).all().get();
            long acknowledged = System.nanoTime();
            long listPolls = 0;
            while (true) {
                listPolls++;
                if (admin.listPartitionReassignments(target.keySet()).reassignments().get().isEmpty()) break;
                Thread.sleep(100);
            }
            long completed = System.nanoTime();
            long describePolls = 0;
            while (true) {
                describePolls++;
                if (allMoved(admin, topic, target)) break;
                Thread.sleep(100);
            }
            long seen = System.nanoTime();
            System.out.printf(
                "ReassignPartitions {\"partitions\": %d, \"acknowledged_ms\": %.1f,"
                    + " \"reassignments_completed_ms\": %.1f, \"every_partition_moved_ms\": %.1f,"
                    + " \"list_polls\": %d, \"describe_polls\": %d}%n",
                target.size(), (acknowledged - began) / 1e6, (completed - began) / 1e6,
                (seen - began) / 1e6, listPolls, describePolls);
        }
    }

    // The broker's own Metadata: every partition's replicas are the target, every one in sync.
    static boolean allMoved(Admin admin, String topic, Map<TopicPartition, List<Integer>> target) throws Exception {
        TopicDescription described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        for (TopicPartitionInfo p : described.partitions()) {
            List<Integer> wanted = target.get(new TopicPartition(topic, p.partition()));
            List<Integer> replicas = new ArrayList<>();
            for (Node replica : p.replicas()) replicas.add(replica.id());
            Set<Integer> isr = new HashSet<>();
            for (Node replica : p.isr()) isr.add(replica.id());
            if (!replicas.equals(wanted) || !isr.equals(new HashSet<>(wanted))) return false;
        }
        return true;
    }
}
