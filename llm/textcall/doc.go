// Package textcall reads and writes tool calls that a model writes as text in
// DeepSeek's DSML markup, for deployments without native function calling:
//
//	<｜DSML｜tool_calls>
//	<｜DSML｜invoke name="get_weather">
//	<｜DSML｜parameter name="city" string="true">Shanghai</｜DSML｜parameter>
//	<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
//	</｜DSML｜invoke>
//	</｜DSML｜tool_calls>
//
// The marker may be written ｜DSML｜ (U+FF5C), ｜｜DSML｜｜, |DSML|, ||DSML|| or
// ‖DSML‖, in any case. The wrapper may be named tool_calls (V4),
// function_calls (V3.2), tool_use or anything else that is not invoke or
// parameter; attributes may use single or double quotes; the markup may sit
// on one line or many. An invoke written without a wrapper is a call too, and
// a wrapper open tag missing its '>' is accepted when the next tag follows.
//
// A string="true" value is raw text taken verbatim; any other value is read
// as JSON when it parses. The tool's schema, given by a [Catalog], wins over
// the marking: a value for an array or object parameter is decoded as JSON
// even when marked string="true", so is a value for a number, integer or
// boolean parameter that may not be a string, and a value for a parameter
// declared only as a string is kept verbatim. Calls get fresh ids and their
// arguments as a JSON object, members in the order written; a repeated
// parameter keeps its last value.
//
// Markup is removed from the visible text, and so are DSML tags that belong
// to nothing (orphans). A wrapper the model left open ends at its last tag
// when prose or the end of the text follows. Markup that is not complete when
// the text ends (an invoke or parameter not closed, a wrapper with no invoke)
// is left in the text verbatim and makes no call: the user sees what the model
// wrote. The visible text is trimmed of leading and trailing white space.
//
// Calls are never read from reasoning. [Parse] splits inline <think> blocks
// off first with package think; a [Filter] is fed only the content segments
// of a think.Filter. The price: a think tag written inside a parameter value
// is taken as reasoning too. A parameter value ends at the first close tag of
// its parameter, invoke or wrapper, so a value cannot contain one.
//
// [Format], [Instructions] and [FormatResults] write the other direction, for
// providers driven in text tool mode: calls replayed in the format the model
// wrote, the tool descriptions for the system prompt, and results sent back as
// user text.
package textcall
