// Fulltext (english analyzer) over derived record content. Parameters: none.
CREATE FULLTEXT INDEX derived_content IF NOT EXISTS FOR (d:Derived) ON EACH [d.content]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}}
