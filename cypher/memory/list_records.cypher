// Derived records of one group (System 2), optionally only heads, some owners or some layers.
// Parameters: $group_id (str); $heads_only (bool, true = state 'head' only);
//   $owners (list[str] or null = all: Person ids and/or "GROUP" for the group's own records);
//   $layers (list[str] or null = all: per_speaker_core | per_speaker_profile |
//   group_interaction | group_insight).
// Returns, ordered by turn_created then id: id, group_id, layer, utype, content, ts (str),
//   session, turn_created (int), confidence (float), state, segment, owner (Person.id or
//   "GROUP"), owner_kind ('person' | 'group'), owner_name, source, source_kind, source_name,
//   from_ids (list[str], conversation order), supersedes (str or null, the previous state),
//   superseded_by (str or null, the next state).
MATCH (d:Derived {group_id: $group_id})
WHERE (NOT coalesce($heads_only, false) OR d.state = 'head')
  AND ($layers IS NULL OR d.layer IN $layers)
MATCH (d)-[:OWNER]->(o)
MATCH (d)-[:SOURCE]->(s)
WITH d, o, s, CASE WHEN o:Group THEN 'GROUP' ELSE o.id END AS owner
WHERE $owners IS NULL OR owner IN $owners
OPTIONAL MATCH (prev:Derived)-[:SUPERSEDED_BY]->(d)
OPTIONAL MATCH (d)-[:SUPERSEDED_BY]->(next:Derived)
CALL (d) {
  MATCH (d)-[:FROM]->(m:Message)
  WITH m ORDER BY m.turn_created
  RETURN collect(m.id) AS from_ids
}
RETURN d.id AS id, d.group_id AS group_id, d.layer AS layer, d.utype AS utype,
       d.content AS content, d.ts AS ts, d.session AS session, d.turn_created AS turn_created,
       d.confidence AS confidence, d.state AS state, d.segment AS segment,
       owner, CASE WHEN o:Group THEN 'group' ELSE 'person' END AS owner_kind, o.name AS owner_name,
       CASE WHEN s:Group THEN 'GROUP' ELSE s.id END AS source,
       CASE WHEN s:Group THEN 'group' ELSE 'person' END AS source_kind, s.name AS source_name,
       from_ids, prev.id AS supersedes, next.id AS superseded_by
ORDER BY turn_created, id
