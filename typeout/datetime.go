package typeout

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Date and time constants (datatype/timestamp.h).
const (
	usecsPerSec      = 1000000
	usecsPerMinute   = 60 * usecsPerSec
	usecsPerHour     = 60 * usecsPerMinute
	usecsPerDay      = 24 * usecsPerHour
	secsPerDay       = 86400
	postgresEpochJD  = 2451545 // date2j(2000, 1, 1)
	unixEpochJD      = 2440588 // date2j(1970, 1, 1)
	maxTimePrecision = 6
	dateNoBegin      = math.MinInt32
	dateNoEnd        = math.MaxInt32
	timestampNoBegin = math.MinInt64
	timestampNoEnd   = math.MaxInt64
)

var (
	monthNames = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	dayNames   = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
)

// pgTm is struct pg_tm's fields the encoders read.
type pgTm struct {
	year, mon, mday, hour, min, sec int
	fsec                            int // microseconds
	gmtoff                          int // seconds east of UTC
	zone                            string
	hasTZ                           bool
}

// j2date is datetime.c's j2date: a Julian day number to a Gregorian date.
func j2date(jd int) (year, month, day int) {
	julian := uint32(jd)
	julian += 32044
	quad := julian / 146097
	extra := (julian-quad*146097)*4 + 3
	julian += 60 + quad*3 + extra/146097
	quad = julian / 1461
	julian -= quad * 1461
	y := int(julian * 4 / 1461)
	if y != 0 {
		julian = (julian+305)%365 + 123
	} else {
		julian = (julian+306)%366 + 123
	}
	y += int(quad * 4)
	year = y - 4800
	quad = julian * 2141 / 65536
	day = int(julian - 7834*quad/256)
	month = int((quad+10)%12 + 1)
	return
}

// date2j is datetime.c's date2j.
func date2j(y, m, d int) int {
	if m > 2 {
		m += 1
		y += 4800
	} else {
		m += 13
		y += 4799
	}
	century := y / 100
	julian := y*365 - 32167
	julian += y/4 - century + century/4
	julian += 7834*m/256 + d
	return julian
}

func appendPad(dst []byte, v, width int) []byte {
	if v < 0 {
		v = -v
	}
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendSeconds is AppendSeconds (datetime.c): seconds (zero-padded to two
// digits when fill), then the fraction without trailing zeros.
func appendSeconds(dst []byte, sec, fsec int, fill bool) []byte {
	if fill {
		dst = appendPad(dst, sec, 2)
	} else {
		dst = appendPad(dst, sec, 1)
	}
	if fsec == 0 {
		return dst
	}
	if fsec < 0 {
		fsec = -fsec
	}
	if fsec >= 1000000 {
		// AppendSeconds punts to pg_ultostr when precision is not enough.
		dst = append(dst, '.')
		return strconv.AppendInt(dst, int64(fsec), 10)
	}
	var frac [maxTimePrecision]byte
	n := 0
	for i := maxTimePrecision - 1; i >= 0; i-- {
		frac[i] = byte('0' + fsec%10)
		if fsec%10 != 0 && n == 0 {
			n = i + 1
		}
		fsec /= 10
	}
	dst = append(dst, '.')
	return append(dst, frac[:n]...)
}

func yearOut(y int) int {
	if y > 0 {
		return y
	}
	return -(y - 1)
}

// appendTimezone is EncodeTimezone (datetime.c): tz in seconds east of
// UTC, "+hh", "+hh:mm" or "+hh:mm:ss".
func appendTimezone(dst []byte, gmtoff int) []byte {
	sec := gmtoff
	if sec < 0 {
		sec = -sec
	}
	min := sec / 60
	sec -= min * 60
	hour := min / 60
	min -= hour * 60
	if gmtoff >= 0 {
		dst = append(dst, '+')
	} else {
		dst = append(dst, '-')
	}
	dst = appendPad(dst, hour, 2)
	if sec != 0 {
		dst = append(dst, ':')
		dst = appendPad(dst, min, 2)
		dst = append(dst, ':')
		return appendPad(dst, sec, 2)
	}
	if min != 0 {
		dst = append(dst, ':')
		dst = appendPad(dst, min, 2)
	}
	return dst
}

// appendDateOnly is EncodeDateOnly (datetime.c).
func (f *Formatter) appendDateOnly(dst []byte, tm *pgTm) []byte {
	dmy := f.Settings.DateOrder == DMY
	switch f.Settings.DateStyle {
	case ISO:
		dst = appendPad(dst, yearOut(tm.year), 4)
		dst = append(dst, '-')
		dst = appendPad(dst, tm.mon, 2)
		dst = append(dst, '-')
		dst = appendPad(dst, tm.mday, 2)
	case SQL, Postgres:
		sep := byte('/')
		if f.Settings.DateStyle == Postgres {
			sep = '-'
		}
		if dmy {
			dst = appendPad(dst, tm.mday, 2)
			dst = append(dst, sep)
			dst = appendPad(dst, tm.mon, 2)
		} else {
			dst = appendPad(dst, tm.mon, 2)
			dst = append(dst, sep)
			dst = appendPad(dst, tm.mday, 2)
		}
		dst = append(dst, sep)
		dst = appendPad(dst, yearOut(tm.year), 4)
	case German:
		dst = appendPad(dst, tm.mday, 2)
		dst = append(dst, '.')
		dst = appendPad(dst, tm.mon, 2)
		dst = append(dst, '.')
		dst = appendPad(dst, yearOut(tm.year), 4)
	}
	if tm.year <= 0 {
		dst = append(dst, " BC"...)
	}
	return dst
}

func appendHM(dst []byte, tm *pgTm) []byte {
	dst = appendPad(dst, tm.hour, 2)
	dst = append(dst, ':')
	dst = appendPad(dst, tm.min, 2)
	return append(dst, ':')
}

// appendDateTime is EncodeDateTime (datetime.c); the zone's abbreviation
// is printed by the SQL, German and Postgres styles, the numeric offset by
// ISO.
func (f *Formatter) appendDateTime(dst []byte, tm *pgTm) []byte {
	dmy := f.Settings.DateOrder == DMY
	zoneName := func(dst []byte) []byte {
		if tm.hasTZ {
			dst = append(dst, ' ')
			z := tm.zone
			if len(z) > 10 { // MAXTZLEN
				z = z[:10]
			}
			dst = append(dst, z...)
		}
		return dst
	}
	switch f.Settings.DateStyle {
	case ISO:
		dst = appendPad(dst, yearOut(tm.year), 4)
		dst = append(dst, '-')
		dst = appendPad(dst, tm.mon, 2)
		dst = append(dst, '-')
		dst = appendPad(dst, tm.mday, 2)
		dst = append(dst, ' ')
		dst = appendHM(dst, tm)
		dst = appendSeconds(dst, tm.sec, tm.fsec, true)
		if tm.hasTZ {
			dst = appendTimezone(dst, tm.gmtoff)
		}
	case SQL:
		if dmy {
			dst = appendPad(dst, tm.mday, 2)
			dst = append(dst, '/')
			dst = appendPad(dst, tm.mon, 2)
		} else {
			dst = appendPad(dst, tm.mon, 2)
			dst = append(dst, '/')
			dst = appendPad(dst, tm.mday, 2)
		}
		dst = append(dst, '/')
		dst = appendPad(dst, yearOut(tm.year), 4)
		dst = append(dst, ' ')
		dst = appendHM(dst, tm)
		dst = appendSeconds(dst, tm.sec, tm.fsec, true)
		dst = zoneName(dst)
	case German:
		dst = appendPad(dst, tm.mday, 2)
		dst = append(dst, '.')
		dst = appendPad(dst, tm.mon, 2)
		dst = append(dst, '.')
		dst = appendPad(dst, yearOut(tm.year), 4)
		dst = append(dst, ' ')
		dst = appendHM(dst, tm)
		dst = appendSeconds(dst, tm.sec, tm.fsec, true)
		dst = zoneName(dst)
	case Postgres:
		wd := (date2j(tm.year, tm.mon, tm.mday) + 1) % 7
		if wd < 0 {
			wd += 7
		}
		dst = append(dst, dayNames[wd]...)
		dst = append(dst, ' ')
		if dmy {
			dst = appendPad(dst, tm.mday, 2)
			dst = append(dst, ' ')
			dst = append(dst, monthNames[tm.mon-1]...)
		} else {
			dst = append(dst, monthNames[tm.mon-1]...)
			dst = append(dst, ' ')
			dst = appendPad(dst, tm.mday, 2)
		}
		dst = append(dst, ' ')
		dst = appendHM(dst, tm)
		dst = appendSeconds(dst, tm.sec, tm.fsec, true)
		dst = append(dst, ' ')
		dst = appendPad(dst, yearOut(tm.year), 4)
		dst = zoneName(dst)
	}
	if tm.year <= 0 {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendDate is date_out (date.c).
func (f *Formatter) appendDate(dst, d []byte) ([]byte, error) {
	if err := need(d, 4); err != nil {
		return dst, err
	}
	v := int32(le32(d))
	switch v {
	case dateNoBegin:
		return append(dst, "-infinity"...), nil
	case dateNoEnd:
		return append(dst, "infinity"...), nil
	}
	var tm pgTm
	tm.year, tm.mon, tm.mday = j2date(int(v) + postgresEpochJD)
	return f.appendDateOnly(dst, &tm), nil
}

// time2tm is time2tm (date.c).
func time2tm(t int64, tm *pgTm) {
	tm.hour = int(t / usecsPerHour)
	t -= int64(tm.hour) * usecsPerHour
	tm.min = int(t / usecsPerMinute)
	t -= int64(tm.min) * usecsPerMinute
	tm.sec = int(t / usecsPerSec)
	t -= int64(tm.sec) * usecsPerSec
	tm.fsec = int(t)
}

// appendTime is time_out (date.c): EncodeTimeOnly without a zone.
func (f *Formatter) appendTime(dst, d []byte) ([]byte, error) {
	if err := need(d, 8); err != nil {
		return dst, err
	}
	var tm pgTm
	time2tm(int64(le64(d)), &tm)
	dst = appendHM(dst, &tm)
	return appendSeconds(dst, tm.sec, tm.fsec, true), nil
}

// appendTimetz is timetz_out (date.c): TimeTzADT is the time (int64
// microseconds) and the zone (int32 seconds west of UTC).
func (f *Formatter) appendTimetz(dst, d []byte) ([]byte, error) {
	if err := need(d, 12); err != nil {
		return dst, err
	}
	var tm pgTm
	time2tm(int64(le64(d)), &tm)
	zone := int32(le32(d[8:]))
	dst = appendHM(dst, &tm)
	dst = appendSeconds(dst, tm.sec, tm.fsec, true)
	return appendTimezone(dst, -int(zone)), nil
}

// appendTimestamp is timestamp_out and timestamptz_out (timestamp.c):
// timestamp2tm, then EncodeDateTime; timestamptz is shifted into the
// session's TimeZone (pg_localtime), whose abbreviation the non-ISO styles
// print.
func (f *Formatter) appendTimestamp(dst, d []byte, withTZ bool) ([]byte, error) {
	if err := need(d, 8); err != nil {
		return dst, err
	}
	dt := int64(le64(d))
	switch dt {
	case timestampNoBegin:
		return append(dst, "-infinity"...), nil
	case timestampNoEnd:
		return append(dst, "infinity"...), nil
	}
	var tm pgTm
	if withTZ {
		loc, err := f.location()
		if err != nil {
			return dst, err
		}
		// Whole seconds since the Unix epoch, rounded down as timestamp2tm's
		// (dt - fsec) / USECS_PER_SEC with fsec of the sign of dt.
		secs := dt / usecsPerSec
		fsec := dt % usecsPerSec
		if fsec < 0 {
			fsec += usecsPerSec
			secs--
		}
		unix := secs + (postgresEpochJD-unixEpochJD)*secsPerDay
		name, off := time.Unix(unix, 0).In(loc).Zone()
		local := secs + int64(off)
		if err := timestamp2tm(local*usecsPerSec+fsec, &tm); err != nil {
			return dst, err
		}
		tm.gmtoff, tm.zone, tm.hasTZ = off, name, true
	} else if err := timestamp2tm(dt, &tm); err != nil {
		return dst, err
	}
	return f.appendDateTime(dst, &tm), nil
}

// timestamp2tm is timestamp2tm (timestamp.c) without the zone rotation.
func timestamp2tm(dt int64, tm *pgTm) error {
	date := dt / usecsPerDay
	t := dt % usecsPerDay
	if t < 0 {
		t += usecsPerDay
		date--
	}
	date += postgresEpochJD
	if date < 0 || date > math.MaxInt32 {
		return fmt.Errorf("%w: timestamp out of range", ErrCorrupt)
	}
	tm.year, tm.mon, tm.mday = j2date(int(date))
	time2tm(t, tm)
	return nil
}
