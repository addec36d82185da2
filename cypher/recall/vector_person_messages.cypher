// Cosine top-$k messages sent by each given person of one group (System 1 person anchors),
// optionally only those written at or before an instant. A person is scored exactly over all
// of their messages unless the group has its own vector index
// ($index, graphmem.store.scope), the person has more than $exact_max SOURCE relationships (a degree
// read, no scan) and reading `fetch` = max(4 k, $oversample * k * group messages / degree)
// nearest messages of the group from that index is less work than scanning the person's
// messages (fetch <= degree); then the person's messages among those are kept (about
// $oversample * k of them are expected: the person's share of the group times fetch) and
// scored exactly (the index's own score is approximate). The exact scan reads one 384-float
// vector per message the person ever sent.
// Parameters: $group_id (str), $person_ids (list[str]), $vector (list[float], L2-normed),
//   $k (int, per person), $max_instant (float epoch seconds, or null for no time limit),
//   $index (str or null: the group's own vector index), $exact_max (int), $oversample (float).
// Returns: person_id (str), id (str, message id), score (float in [-1, 1], the cosine: Neo4j's
//   similarity (1 + cos) / 2 mapped back); best first per person; and the message's fields as
//   search/get_messages returns them (channel, speaker, session, turn, ts, text, turn_created).
MATCH (g:Group {id: $group_id})
UNWIND $person_ids AS pid
MATCH (p:Person {group_id: $group_id, id: pid})
WITH p, pid, COUNT { (p)<-[:SOURCE]-() } AS degree, coalesce(g.message_seq, 0) AS size
WITH p, pid, degree,
     CASE WHEN degree = 0 OR size = 0 THEN degree + 1
          ELSE toInteger(ceil(toFloat($oversample) * $k * size / degree)) END AS wanted
WITH p, pid, CASE WHEN wanted < 4 * $k THEN 4 * $k ELSE wanted END AS fetch,
     $index IS NOT NULL AND degree > $exact_max AS large, degree
CALL (p, fetch, large, degree) {
  WITH p
  WHERE NOT (large AND fetch <= degree)
  MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p)
  WHERE m.embedding IS NOT NULL AND ($max_instant IS NULL OR m.instant <= $max_instant)
  WITH m, 2 * vector.similarity.cosine(m.embedding, $vector) - 1 AS score
  ORDER BY score DESC, m.turn_created
  LIMIT $k
  RETURN m.id AS id, score, m.channel AS channel, m.speaker AS speaker, m.session AS session, m.turn AS turn, m.ts AS ts,
         m.text AS text, m.turn_created AS turn_created
  UNION ALL
  WITH p, fetch
  WHERE large AND fetch <= degree
  CALL db.index.vector.queryNodes($index, fetch, $vector) YIELD node
  WITH p, node
  WHERE node.group_id = $group_id AND ($max_instant IS NULL OR node.instant <= $max_instant)
    AND (node)-[:SOURCE]->(p)
  WITH node, 2 * vector.similarity.cosine(node.embedding, $vector) - 1 AS score
  ORDER BY score DESC, node.turn_created
  LIMIT $k
  RETURN node.id AS id, score, node.channel AS channel, node.speaker AS speaker, node.session AS session, node.turn AS turn, node.ts AS ts,
         node.text AS text, node.turn_created AS turn_created
}
RETURN pid AS person_id, id, score, channel, speaker, session, turn, ts, text, turn_created
