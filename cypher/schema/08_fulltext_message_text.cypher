// Fulltext (Lucene, english analyzer: stemming + stop words) over the verbatim text.
// Parameters: none. Returns nothing.
CREATE FULLTEXT INDEX message_text IF NOT EXISTS FOR (m:Message) ON EACH [m.text]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}}
