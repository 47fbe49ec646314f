package protocol

// InputFile is the type of an input part that attaches a text file: its
// name and content. The server puts it into the user's message as a
// fenced block headed by the name (server/attach.go), as if pasted.
const InputFile = "file"

// Bounds of attached files.
const (
	// MaxAttachments bounds the files one input attaches.
	MaxAttachments = 10
	// MaxAttachmentSize bounds one attached file's text in bytes.
	MaxAttachmentSize = 256 << 10
	// MaxAttachmentName bounds an attached file's name in bytes.
	MaxAttachmentName = 255
)
