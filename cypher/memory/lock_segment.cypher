// Open one segment write: lock the group and check that nothing of the segment is written yet.
// Runs first inside the segment's write transaction. The SET takes the Group node's write lock,
// so two writers of one group are serialised; g.writer_segments counts the segments written.
// Parameters: $group_id (str); $segment_id (str, the Segment marker id);
//   $message_ids (list[str], ids of the messages the segment covers);
//   $versions (list of {id: str, edits: int}: the text version of each message the Writer read,
//   or [] for no check).
// Returns (0 rows when the group does not exist): segments_before (int, segments written before
//   this one), existing (int, markers already stored under $segment_id), covered (int, how many
//   of $message_ids some stored segment already covers), erasures (int, the group's erasure count:
//   moved by every erasure, groups/count_erasure and groups/fence_group), erasing (bool, the
//   group is being erased), changed (int, messages of $versions whose text was edited since).
MATCH (g:Group {id: $group_id})
SET g.writer_segments = coalesce(g.writer_segments, 0) + 1
WITH g
OPTIONAL MATCH (s:Segment {group_id: $group_id, id: $segment_id})
WITH g, count(s) AS existing
OPTIONAL MATCH (m:Message {group_id: $group_id})<-[:COVERS]-(:Segment)
  WHERE m.id IN $message_ids
WITH g, existing, count(DISTINCT m) AS covered
RETURN g.writer_segments - 1 AS segments_before, existing, covered,
       coalesce(g.erasures, 0) AS erasures, g.erasing IS NOT NULL AS erasing,
       COUNT {
         UNWIND $versions AS v
         MATCH (e:Message {group_id: $group_id, id: v.id})
         WHERE size(coalesce(e.text_history, [])) <> v.edits
         RETURN e
       } AS changed
