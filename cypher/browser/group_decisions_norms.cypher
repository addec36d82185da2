// The group's current decisions, events and norms: head records of the GROUP layers
// (Interaction: joint events, relations, decisions; Insight: norms and shared beliefs), in
// time order, with who stated them, the messages behind them and how often they changed.
// Neo4j Browser: first  :param group_id => 'trail-trip'  then paste this query.
// Parameters: $group_id (str, the group id).
// Returns, ordered by time (instant) then id: record (Derived node), group (Group node),
//   source (Person or Group node), messages (list of FROM Message nodes), id (str), layer
//   ('group_interaction' | 'group_insight'), label ('Interaction' | 'Insight'), utype (str),
//   content (str), ts (str, ISO-8601), source_id (str), source_name (str), from_ids
//   (list[str]), earlier_states (int, how many superseded states precede this head).
MATCH (d:Derived {group_id: $group_id, state: 'head'})-[:OWNER]->(g:Group {id: $group_id})
WHERE d.layer IN ['group_interaction', 'group_insight']
MATCH (d)-[:SOURCE]->(s)
CALL (d) {
  MATCH (d)-[:FROM]->(m:Message)
  WITH m ORDER BY m.turn_created
  RETURN collect(m) AS messages
}
CALL (d) {
  OPTIONAL MATCH (prev:Derived)-[:SUPERSEDED_BY*1..]->(d)
  RETURN count(prev) AS earlier_states
}
RETURN d AS record, g AS group, s AS source, messages, d.id AS id, d.layer AS layer,
       CASE d.layer WHEN 'group_interaction' THEN 'Interaction' ELSE 'Insight' END AS label,
       d.utype AS utype, d.content AS content, d.ts AS ts,
       CASE WHEN s:Group THEN 'GROUP' ELSE s.id END AS source_id, s.name AS source_name,
       [m IN messages | m.id] AS from_ids, earlier_states
ORDER BY d.instant, id
