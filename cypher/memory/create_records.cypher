// Create derived records (System 2): the :Derived node with its layer label, the embedding,
// and the OWNER, SOURCE and FROM links. The layer label comes from a whitelist in
// graphmem.derived.memory (Core | Profile | Interaction | Insight), never from user input.
// Parameters: $group_id (str); $rows (list of maps, one per record):
//   id (str, entry_id), label (str, layer label), layer (str), utype (str), content (str, NFC),
//   content_grams (str or null: bigram tokens of its unspaced-script runs, graphmem.core.text.gram_field),
//   ts (str, ISO-8601), instant (float, epoch seconds of ts), session (str),
//   turn_created (int), confidence (float in [0, 1]), segment (str, Segment marker id),
//   owner (str, Person.id; ignored for a group owner), owner_kind ('person' | 'group'),
//   source (str, Person.id; ignored for a group source), source_kind ('person' | 'group'),
//   from_ids (list[str], supporting message ids), embedding (list[float], L2-normalised).
// Returns: one row per record: id (str), owners (int), sources (int), froms (int) - the links
//   actually made (1, 1 and len(from_ids) when every endpoint exists); readable (int, FROM
//   messages whose text is not blank).
UNWIND $rows AS row
CREATE (d:Derived {group_id: $group_id, id: row.id})
SET d:$(row.label),
    d.layer = row.layer, d.utype = row.utype, d.content = row.content, d.content_grams = row.content_grams,
    d.ts = row.ts,
    d.instant = row.instant, d.session = row.session, d.turn_created = row.turn_created,
    d.confidence = row.confidence, d.segment = row.segment, d.state = 'head'
WITH d, row
CALL db.create.setNodeVectorProperty(d, 'embedding', row.embedding)
WITH d, row
CALL (d, row) {
  OPTIONAL MATCH (p:Person {group_id: $group_id, id: row.owner}) WHERE row.owner_kind = 'person'
  OPTIONAL MATCH (g:Group {id: $group_id}) WHERE row.owner_kind = 'group'
  WITH d, coalesce(p, g) AS o
  FOREACH (x IN CASE WHEN o IS NULL THEN [] ELSE [o] END | CREATE (d)-[:OWNER]->(x))
  RETURN count(o) AS owners
}
CALL (d, row) {
  OPTIONAL MATCH (p:Person {group_id: $group_id, id: row.source}) WHERE row.source_kind = 'person'
  OPTIONAL MATCH (g:Group {id: $group_id}) WHERE row.source_kind = 'group'
  WITH d, coalesce(p, g) AS s
  FOREACH (x IN CASE WHEN s IS NULL THEN [] ELSE [s] END | CREATE (d)-[:SOURCE]->(x))
  RETURN count(s) AS sources
}
CALL (d, row) {
  UNWIND row.from_ids AS mid
  MATCH (m:Message {group_id: $group_id, id: mid})
  CREATE (d)-[:FROM]->(m)
  RETURN count(m) AS froms, sum(CASE WHEN trim(m.text) <> '' THEN 1 ELSE 0 END) AS readable
}
RETURN d.id AS id, owners, sources, froms, readable
