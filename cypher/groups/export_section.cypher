// One page of one section of a group export (graphmem.groups.export): the nodes after a key,
// in key order, with the links an import needs. Sections: 'group_node' (the Group node), 'person' and 'session' (by id),
// 'message' (by seq, the arrival order; with its sender's Person id), 'segment' (by index; with
// the ids it COVERS and its derived records, each with OWNER, SOURCE, FROM and SUPERSEDED_BY).
// Parameters: $group_id (str), $section (str, one of the above), $after (str: the last id /
//   seq / index of the previous page as text, "" for the first page), $limit (int, nodes).
// Returns: key (str, this node's key), props (map, every stored property), person_id (str or
//   null, messages), covers (list[str], segments), records (list of maps {labels, props,
//   owner, source, from, superseded_by}, segments; ordered by id).
CALL (*) {
  WITH * WHERE $section = 'group_node'
  MATCH (n:Group {id: $group_id})
  RETURN n, n.id AS key, n.id AS k LIMIT 1
  UNION ALL
  WITH * WHERE $section = 'person'
  MATCH (n:Person {group_id: $group_id}) WHERE n.id > $after
  RETURN n, n.id AS key, n.id AS k ORDER BY k LIMIT $limit
  UNION ALL
  WITH * WHERE $section = 'session'
  MATCH (n:Session {group_id: $group_id}) WHERE n.id > $after
  RETURN n, n.id AS key, n.id AS k ORDER BY k LIMIT $limit
  UNION ALL
  WITH * WHERE $section = 'message'
  MATCH (n:Message {group_id: $group_id})
  WHERE n.seq > coalesce(toInteger(nullif($after, '')), -1)
  RETURN n, toString(n.seq) AS key, n.seq AS k ORDER BY k LIMIT $limit
  UNION ALL
  WITH * WHERE $section = 'segment'
  MATCH (n:Segment {group_id: $group_id})
  WHERE n.index > coalesce(toInteger(nullif($after, '')), 0)
  RETURN n, toString(n.index) AS key, n.index AS k ORDER BY k LIMIT $limit
}
WITH n, key, k
ORDER BY k
RETURN key, properties(n) AS props,
       CASE WHEN n:Message THEN [(n)-[:SOURCE]->(p:Person) | p.id][0] END AS person_id,
       CASE WHEN n:Segment THEN [(n)-[:COVERS]->(m:Message) | m.id] ELSE [] END AS covers,
       CASE WHEN n:Segment THEN COLLECT {
         MATCH (d:Derived {group_id: $group_id, segment: n.id})
         RETURN {labels: labels(d), props: properties(d),
                 owner: [(d)-[:OWNER]->(o) | CASE WHEN o:Group THEN 'GROUP' ELSE o.id END][0],
                 source: [(d)-[:SOURCE]->(s) | CASE WHEN s:Group THEN 'GROUP' ELSE s.id END][0],
                 from: [(d)-[:FROM]->(m:Message) | m.id],
                 superseded_by: [(d)-[:SUPERSEDED_BY]->(x:Derived) | x.id][0]} AS r
         ORDER BY d.id
       } ELSE [] END AS records
