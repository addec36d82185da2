// The group, its roster (Persons that are MEMBER_OF it) and how many Writer segments it has.
// Parameters: $group_id (str).
// Returns (0 rows when the group does not exist): name (str, the group's name),
//   persons (list of maps: id, name, speaker_id, aliases; ordered by Person id),
//   segments (int, Writer segments written so far: Group.writer_segments, 0 when none),
//   erasures (int, the group's erasure count, memory/lock_segment), erasing (bool, being erased).
MATCH (g:Group {id: $group_id})
OPTIONAL MATCH (p:Person {group_id: $group_id})-[:MEMBER_OF]->(g)
WITH g, p ORDER BY p.id
RETURN g.name AS name,
       [x IN collect(p) | {id: x.id, name: x.name, speaker_id: x.speaker_id, aliases: x.aliases}]
         AS persons,
       coalesce(g.writer_segments, 0) AS segments, coalesce(g.erasures, 0) AS erasures,
       g.erasing IS NOT NULL AS erasing
