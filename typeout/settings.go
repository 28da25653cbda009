package typeout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DateStyle is the output half of the DateStyle setting.
type DateStyle uint8

// DateStyle values (USE_ISO_DATES... in miscadmin.h).
const (
	ISO DateStyle = iota
	Postgres
	SQL
	German
)

// DateOrder is the field order half of DateStyle.
type DateOrder uint8

// DateOrder values (DATEORDER_* in miscadmin.h); output only tells DMY
// from the others.
const (
	MDY DateOrder = iota
	DMY
	YMD
)

// IntervalStyle is the IntervalStyle setting.
type IntervalStyle uint8

// IntervalStyle values (INTSTYLE_* in miscadmin.h).
const (
	PostgresStyle IntervalStyle = iota
	PostgresVerbose
	SQLStandard
	ISO8601
)

// Settings are the session settings output functions read. The zero
// Settings is PostgreSQL's defaults (DateStyle ISO, MDY; IntervalStyle
// postgres; TimeZone GMT; bytea_output hex; lc_monetary C) except for
// extra_float_digits, which is 0 in the zero value and 1 by default:
// start from DefaultSettings.
type Settings struct {
	DateStyle     DateStyle
	DateOrder     DateOrder
	IntervalStyle IntervalStyle
	// TimeZone is an IANA zone name ("" is GMT, the server's boot value;
	// initdb writes the system's zone into postgresql.conf).
	TimeZone string
	// ExtraFloatDigits is extra_float_digits, -15 to 3: above 0 floats
	// print their shortest exact text.
	ExtraFloatDigits int
	// ByteaEscape is bytea_output = escape (else hex).
	ByteaEscape bool
	// LCMonetary is lc_monetary; money prints only with "", "C" or
	// "POSIX".
	LCMonetary string
	// TZDir, when not empty, is the directory of compiled (TZif) zone
	// files TimeZone is read from: the server's own copy of the IANA data
	// (SHAREDIR/timezone, or the system's /usr/share/zoneinfo for a build
	// --with-system-tzdata), whose rules Go's zoneinfo may not share. Empty:
	// Go's time.LoadLocation.
	TZDir string
}

// DefaultSettings returns PostgreSQL's defaults (guc.c's boot values).
func DefaultSettings() Settings {
	return Settings{ExtraFloatDigits: 1, TimeZone: "GMT", LCMonetary: "C"}
}

func (s *Settings) monetaryC() bool {
	switch s.LCMonetary {
	case "", "C", "POSIX":
		return true
	}
	return false
}

func settingError(name, value, why string) error {
	return fmt.Errorf("%w: %s = %q: %s", ErrSetting, name, value, why)
}

// Set applies one setting by name (case-insensitive, as SET and the
// configuration files take it); a setting output functions do not read is
// ignored. lc_monetary other than C or POSIX is kept, and an error
// wrapping ErrSetting names it (the caller may set LCMonetary to "C" and
// go on).
func (s *Settings) Set(name, value string) error {
	switch strings.ToLower(name) {
	case "datestyle":
		return s.setDateStyle(value)
	case "intervalstyle":
		switch strings.ToLower(value) {
		case "postgres":
			s.IntervalStyle = PostgresStyle
		case "postgres_verbose":
			s.IntervalStyle = PostgresVerbose
		case "sql_standard":
			s.IntervalStyle = SQLStandard
		case "iso_8601":
			s.IntervalStyle = ISO8601
		default:
			return settingError("IntervalStyle", value, "not postgres, postgres_verbose, sql_standard or iso_8601")
		}
	case "timezone":
		if _, err := loadZone(value, s.TZDir); err != nil {
			return settingError("TimeZone", value, err.Error())
		}
		s.TimeZone = value
	case "extra_float_digits":
		v, err := strconv.ParseInt(value, 0, 32)
		if err != nil || v < -15 || v > 3 {
			return settingError("extra_float_digits", value, "not an integer from -15 to 3")
		}
		s.ExtraFloatDigits = int(v)
	case "bytea_output":
		switch strings.ToLower(value) {
		case "hex":
			s.ByteaEscape = false
		case "escape":
			s.ByteaEscape = true
		default:
			return settingError("bytea_output", value, "not hex or escape")
		}
	case "lc_monetary":
		s.LCMonetary = value
		if !s.monetaryC() {
			return settingError("lc_monetary", value, "only C and POSIX are supported (money would print differently)")
		}
	}
	return nil
}

// setDateStyle is check_datestyle (variable.c): a comma-separated list of
// a style (ISO, SQL, Postgres, German: German also sets DMY unless an
// order is given) and an order (YMD; DMY, Euro, European; MDY, US,
// NonEuro, NonEuropean), DEFAULT for "ISO, MDY".
func (s *Settings) setDateStyle(value string) error {
	style, order := s.DateStyle, s.DateOrder
	haveStyle, haveOrder := false, false
	setStyle := func(v DateStyle) bool {
		ok := !haveStyle || style == v
		style, haveStyle = v, true
		return ok
	}
	setOrder := func(v DateOrder) bool {
		ok := !haveOrder || order == v
		order, haveOrder = v, true
		return ok
	}
	for _, tok := range strings.Split(value, ",") {
		tok = strings.ToUpper(strings.Trim(strings.TrimSpace(tok), `"`))
		ok := true
		switch {
		case tok == "ISO":
			ok = setStyle(ISO)
		case tok == "SQL":
			ok = setStyle(SQL)
		case strings.HasPrefix(tok, "POSTGRES"):
			ok = setStyle(Postgres)
		case tok == "GERMAN":
			ok = setStyle(German)
			if !haveOrder {
				order = DMY
			}
		case tok == "YMD":
			ok = setOrder(YMD)
		case tok == "DMY" || strings.HasPrefix(tok, "EURO"):
			ok = setOrder(DMY)
		case tok == "MDY" || tok == "US" || strings.HasPrefix(tok, "NONEURO"):
			ok = setOrder(MDY)
		case tok == "DEFAULT":
			if !haveStyle {
				style = ISO
			}
			if !haveOrder {
				order = MDY
			}
		default:
			return settingError("DateStyle", value, fmt.Sprintf("unrecognized key word %q", tok))
		}
		if !ok {
			return settingError("DateStyle", value, "conflicting specifications")
		}
	}
	s.DateStyle, s.DateOrder = style, order
	return nil
}

// ConfigFiles reads configuration files for LoadSettings: ReadFile returns
// a file's bytes (an error wrapping fs.ErrNotExist when there is none);
// ReadDir the names of the entries of a directory (include_dir), nil
// making include_dir an error.
type ConfigFiles struct {
	ReadFile func(path string) ([]byte, error)
	ReadDir  func(path string) ([]string, error)
}

// maxConfDepth is CONF_FILE_MAX_DEPTH (guc.h): includes nested deeper are
// an error.
const maxConfDepth = 10

// LoadSettings reads dataDir's postgresql.conf and then its
// postgresql.auto.conf (absent is fine), as the server does at start,
// following include, include_if_exists and include_dir (relative paths
// from the including file's directory), starting from DefaultSettings.
// The last value of a setting wins. An error names the file and line; an
// lc_monetary the package cannot honour is reported after everything else
// is read, with the Settings complete (see Set).
func LoadSettings(dataDir string, files ConfigFiles) (Settings, error) {
	s := DefaultSettings()
	err := s.Load(dataDir, files)
	return s, err
}

// Load is LoadSettings starting from s: a TZDir set beforehand is the one
// TimeZone is checked against.
func (s *Settings) Load(dataDir string, files ConfigFiles) error {
	var deferred error
	l := &confLoader{files: files, set: func(name, value, where string) error {
		err := s.Set(name, value)
		if strings.EqualFold(name, "lc_monetary") {
			deferred = nil // a later lc_monetary replaces an earlier one
			if err != nil {
				deferred = fmt.Errorf("%s: %w", where, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}}
	if err := l.file(filepath.Join(dataDir, "postgresql.conf"), false, 0); err != nil {
		return err
	}
	if err := l.file(filepath.Join(dataDir, "postgresql.auto.conf"), true, 0); err != nil {
		return err
	}
	return deferred
}

// ParseConf applies one configuration file's text (path names it in
// errors and anchors its relative includes), following includes through
// files.
func (s *Settings) ParseConf(text []byte, path string, files ConfigFiles) error {
	l := &confLoader{files: files, set: func(name, value, where string) error {
		if err := s.Set(name, value); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}}
	return l.text(text, path, 0)
}

type confLoader struct {
	files ConfigFiles
	set   func(name, value, where string) error
}

func (l *confLoader) file(path string, missingOK bool, depth int) error {
	if depth > maxConfDepth {
		return fmt.Errorf("%w: %s: includes nested more than %d deep", ErrSetting, path, maxConfDepth)
	}
	if l.files.ReadFile == nil {
		return fmt.Errorf("%w: %s: no ReadFile to read it", ErrSetting, path)
	}
	b, err := l.files.ReadFile(path)
	if err != nil {
		if missingOK && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("%w: reading %s: %w", ErrSetting, path, err)
	}
	return l.text(b, path, depth)
}

func (l *confLoader) text(b []byte, path string, depth int) error {
	for lineno, line := range strings.Split(string(b), "\n") {
		where := fmt.Sprintf("%s:%d", path, lineno+1)
		name, value, ok, err := parseConfLine(line)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrSetting, where, err)
		}
		if !ok {
			continue
		}
		rel := func(p string) string {
			if filepath.IsAbs(p) {
				return p
			}
			return filepath.Join(filepath.Dir(path), p)
		}
		switch strings.ToLower(name) {
		case "include":
			if err := l.file(rel(value), false, depth+1); err != nil {
				return err
			}
		case "include_if_exists":
			if err := l.file(rel(value), true, depth+1); err != nil {
				return err
			}
		case "include_dir":
			if l.files.ReadDir == nil {
				return fmt.Errorf("%w: %s: include_dir without ReadDir", ErrSetting, where)
			}
			dir := rel(value)
			names, err := l.files.ReadDir(dir)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrSetting, where, err)
			}
			// ParseConfigDirectory: names ending in .conf, not starting
			// with a dot, in strcmp order.
			var confs []string
			for _, n := range names {
				if !strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".conf") {
					confs = append(confs, n)
				}
			}
			sort.Strings(confs)
			for _, n := range confs {
				if err := l.file(filepath.Join(dir, n), false, depth+1); err != nil {
					return err
				}
			}
		default:
			if err := l.set(name, value, where); err != nil {
				return err
			}
		}
	}
	return nil
}

func isLetter(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c >= 0x80
}
func isLetterOrDigit(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' }

// parseConfLine reads one line as guc-file.l's grammar does: a name (an
// identifier, optionally qualified), an optional "=", a value (a quoted
// string with its escapes, or an unquoted identifier, number or string),
// a comment from "#" on. ok is false for an empty or comment line.
func parseConfLine(line string) (name, value string, ok bool, err error) {
	i := 0
	skip := func() {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
			i++
		}
	}
	skip()
	if i == len(line) || line[i] == '#' {
		return "", "", false, nil
	}
	start := i
	if !isLetter(line[i]) {
		return "", "", false, fmt.Errorf("syntax error near %q", line[i:])
	}
	for i < len(line) && isLetterOrDigit(line[i]) {
		i++
	}
	if i < len(line) && line[i] == '.' && i+1 < len(line) && isLetter(line[i+1]) {
		i++
		for i < len(line) && isLetterOrDigit(line[i]) {
			i++
		}
	}
	name = line[start:i]
	skip()
	if i < len(line) && line[i] == '=' {
		i++
		skip()
	}
	if i == len(line) || line[i] == '#' {
		return "", "", false, fmt.Errorf("syntax error: %s has no value", name)
	}
	if line[i] == '\'' {
		var b strings.Builder
		i++
		closed := false
		for i < len(line) {
			c := line[i]
			if c == '\\' && i+1 < len(line) {
				i++
				switch e := line[i]; e {
				case 'b':
					b.WriteByte('\b')
				case 'f':
					b.WriteByte('\f')
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				case '0', '1', '2', '3', '4', '5', '6', '7':
					v, k := 0, 0
					for ; k < 3 && i+k < len(line) && line[i+k] >= '0' && line[i+k] <= '7'; k++ {
						v = v<<3 + int(line[i+k]-'0')
					}
					i += k - 1
					b.WriteByte(byte(v))
				default:
					b.WriteByte(e)
				}
				i++
				continue
			}
			if c == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					b.WriteByte('\'')
					i += 2
					continue
				}
				i++
				closed = true
				break
			}
			b.WriteByte(c)
			i++
		}
		if !closed {
			return "", "", false, fmt.Errorf("unterminated quoted string for %s", name)
		}
		value = b.String()
	} else {
		start := i
		for i < len(line) {
			c := line[i]
			if !(isLetterOrDigit(c) || strings.IndexByte("-._:/+", c) >= 0) {
				break
			}
			i++
		}
		if i == start {
			return "", "", false, fmt.Errorf("syntax error near %q", line[i:])
		}
		value = line[start:i]
	}
	skip()
	if i < len(line) && line[i] != '#' {
		return "", "", false, fmt.Errorf("syntax error near %q", line[i:])
	}
	return name, value, true, nil
}

// zoneCache keeps the loaded TimeZone.
type zoneCache struct {
	name, dir string
	loc       *time.Location
}

func loadZone(name, dir string) (*time.Location, error) {
	if strings.EqualFold(name, "localtime") || strings.EqualFold(name, "local") {
		return nil, errors.New("the server's local zone is unknown here: name the zone")
	}
	if name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
		return nil, errors.New("not a zone name")
	}
	if dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		return time.LoadLocationFromTZData(name, b)
	}
	return time.LoadLocation(name)
}

func (f *Formatter) location() (*time.Location, error) {
	if f.tz != nil && f.tz.name == f.Settings.TimeZone && f.tz.dir == f.Settings.TZDir {
		return f.tz.loc, nil
	}
	loc, err := loadZone(f.Settings.TimeZone, f.Settings.TZDir)
	if err != nil {
		return nil, settingError("TimeZone", f.Settings.TimeZone, err.Error())
	}
	f.tz = &zoneCache{name: f.Settings.TimeZone, dir: f.Settings.TZDir, loc: loc}
	return loc, nil
}

// String is the style as SHOW DateStyle names it.
func (s DateStyle) String() string {
	switch s {
	case ISO:
		return "ISO"
	case Postgres:
		return "Postgres"
	case SQL:
		return "SQL"
	case German:
		return "German"
	}
	return "DateStyle(" + strconv.Itoa(int(s)) + ")"
}

// String is the order as SHOW DateStyle names it.
func (o DateOrder) String() string {
	switch o {
	case MDY:
		return "MDY"
	case DMY:
		return "DMY"
	case YMD:
		return "YMD"
	}
	return "DateOrder(" + strconv.Itoa(int(o)) + ")"
}

// String is the style as SHOW IntervalStyle names it.
func (s IntervalStyle) String() string {
	switch s {
	case PostgresStyle:
		return "postgres"
	case PostgresVerbose:
		return "postgres_verbose"
	case SQLStandard:
		return "sql_standard"
	case ISO8601:
		return "iso_8601"
	}
	return "IntervalStyle(" + strconv.Itoa(int(s)) + ")"
}
