package typeout

// CopyNull is how COPY's text format prints NULL (null_print's default).
const CopyNull = `\N`

// AppendCopyText appends s quoted as COPY's text format quotes one column
// (CopyAttributeOutText, commands/copyto.c): backspace, form feed,
// newline, carriage return, tab and vertical tab as \b \f \n \r \t \v, a
// backslash doubled, the delimiter (tab by default) behind a backslash;
// other bytes, other control characters included, as they are.
func AppendCopyText(dst, s []byte, delim byte) []byte {
	for _, c := range s {
		if c < 0x20 {
			var e byte
			switch c {
			case '\b':
				e = 'b'
			case '\f':
				e = 'f'
			case '\n':
				e = 'n'
			case '\r':
				e = 'r'
			case '\t':
				e = 't'
			case '\v':
				e = 'v'
			default:
				if c == delim {
					e = c
				}
			}
			if e != 0 {
				dst = append(dst, '\\', e)
				continue
			}
			dst = append(dst, c)
			continue
		}
		if c == '\\' || c == delim {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// CSV holds COPY's CSV options: DELIMITER, QUOTE, ESCAPE and NULL.
type CSV struct {
	Delim, Quote, Escape byte
	Null                 string
}

// DefaultCSV is COPY ... (FORMAT csv)'s defaults: comma, double quote as
// quote and escape, NULL as an empty unquoted field.
var DefaultCSV = CSV{Delim: ',', Quote: '"', Escape: '"'}

// Append appends s quoted as CopyAttributeOutCSV (copyto.c) does: quoted
// when forced, when it equals the NULL string, when it is \. alone in the
// only column of a row (singleColumn), or when it holds the delimiter,
// the quote, a newline or a carriage return; inside quotes the quote and
// escape characters are preceded by the escape character. A NULL is
// c.Null itself, unquoted: the caller appends it.
func (c CSV) Append(dst, s []byte, force, singleColumn bool) []byte {
	quote := force || string(s) == c.Null
	if !quote {
		if singleColumn && string(s) == `\.` {
			quote = true
		} else {
			for _, b := range s {
				if b == c.Delim || b == c.Quote || b == '\n' || b == '\r' {
					quote = true
					break
				}
			}
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, c.Quote)
	for _, b := range s {
		if b == c.Quote || b == c.Escape {
			dst = append(dst, c.Escape)
		}
		dst = append(dst, b)
	}
	return append(dst, c.Quote)
}

// AppendLiteral appends s as an SQL string literal as quote_literal does
// (quote.c): in single quotes, a quote doubled, and when s holds a
// backslash the E” form with backslashes doubled; then, when castTo is
// not empty, "::" and castTo (a type name as format_type prints it, which
// the caller gives), so that PostgreSQL reads the literal back as the
// value whatever standard_conforming_strings says.
func AppendLiteral(dst, s []byte, castTo string) []byte {
	for _, b := range s {
		if b == '\\' {
			dst = append(dst, 'E')
			break
		}
	}
	dst = append(dst, '\'')
	for _, b := range s {
		if b == '\'' || b == '\\' {
			dst = append(dst, b)
		}
		dst = append(dst, b)
	}
	dst = append(dst, '\'')
	if castTo != "" {
		dst = append(dst, ':', ':')
		dst = append(dst, castTo...)
	}
	return dst
}
