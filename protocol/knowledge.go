package protocol

// MethodKnowledgeList lists the knowledge bases a thread/start may attach,
// as they are when it is answered: bases are added and removed by rein kb
// in the server's store, by any process, so a client asks when it offers
// the choice (the page: each time its new-thread dialog opens) rather than
// keeping initialize's list.
const MethodKnowledgeList = "knowledge/list"

// KnowledgeListParams are the params of knowledge/list: none.
type KnowledgeListParams struct{}

// KnowledgeListResult is the result of knowledge/list.
type KnowledgeListResult struct {
	// KnowledgeBases are the names thread/start's knowledgeBases may
	// take: the bases in the server's store that the connection's token
	// may use, by name.
	KnowledgeBases []string `json:"knowledgeBases" jsonschema:"the knowledge bases thread/start may attach now: those in the server's store the connection's token may use"`
}
