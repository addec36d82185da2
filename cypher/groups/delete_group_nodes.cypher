// Erase one group, one bounded step (graphmem.groups.service.erase_group calls it until it
// deletes nothing): at most $batch nodes of each of the group's own labels - derived records
// (every version), Writer segments, messages, sessions, persons - with their relationships,
// vectors and fulltext entries, each found by its (group_id, id) index. Runs after
// groups/fence_group, so nothing adds to the group meanwhile. Nothing of another group is touched.
// Parameters: $group_id (str); $batch (int >= 1, nodes of each label per call).
// Returns: deleted (int, nodes deleted by this call; 0 when none of these labels is left).
CALL () {
  MATCH (n:Derived {group_id: $group_id}) WHERE n.id IS NOT NULL
  WITH n LIMIT $batch
  DETACH DELETE n
  RETURN count(*) AS records
}
CALL () {
  MATCH (n:Segment {group_id: $group_id}) WHERE n.id IS NOT NULL
  WITH n LIMIT $batch
  DETACH DELETE n
  RETURN count(*) AS segments
}
CALL () {
  MATCH (n:Message {group_id: $group_id}) WHERE n.id IS NOT NULL
  WITH n LIMIT $batch
  DETACH DELETE n
  RETURN count(*) AS messages
}
CALL () {
  MATCH (n:Session {group_id: $group_id}) WHERE n.id IS NOT NULL
  WITH n LIMIT $batch
  DETACH DELETE n
  RETURN count(*) AS sessions
}
CALL () {
  MATCH (n:Person {group_id: $group_id}) WHERE n.id IS NOT NULL
  WITH n LIMIT $batch
  DETACH DELETE n
  RETURN count(*) AS persons
}
RETURN records + segments + messages + sessions + persons AS deleted
