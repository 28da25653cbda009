package typeout

import (
	"math"
	"strconv"
)

// appendInterval is interval_out (timestamp.c): interval2itm, then
// EncodeInterval (datetime.c) in the IntervalStyle. Interval is the time
// (int64 microseconds), days (int32) and months (int32); from PostgreSQL 17
// all three at their minimum or maximum are -infinity and infinity.
func (f *Formatter) appendInterval(dst, d []byte) ([]byte, error) {
	if err := need(d, 16); err != nil {
		return dst, err
	}
	t := int64(le64(d))
	day := int32(le32(d[8:]))
	month := int32(le32(d[12:]))
	if t == math.MinInt64 && day == math.MinInt32 && month == math.MinInt32 {
		return append(dst, "-infinity"...), nil
	}
	if t == math.MaxInt64 && day == math.MaxInt32 && month == math.MaxInt32 {
		return append(dst, "infinity"...), nil
	}
	year := int64(month / 12)
	mon := int64(month % 12)
	mday := int64(day)
	hour := t / usecsPerHour
	t -= hour * usecsPerHour
	min := t / usecsPerMinute
	t -= min * usecsPerMinute
	sec := t / usecsPerSec
	fsec := t - sec*usecsPerSec
	return encodeInterval(dst, f.Settings.IntervalStyle, f.major() < 15, year, mon, mday, hour, min, sec, fsec), nil
}

func appendI(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// appendPad64 is "%02lld"-like: at least width digits, the sign first.
func appendPad64(dst []byte, v int64, width int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	var buf [24]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// encodeInterval is EncodeInterval (datetime.c). Before PostgreSQL 15 the
// fields were ints (struct pg_tm, not pg_itm): with narrow, negating or
// taking the absolute value of -2147483648 days leaves it negative, as
// there.
func encodeInterval(dst []byte, style IntervalStyle, narrow bool, year, mon, mday, hour, min, sec, fsec int64) []byte {
	abs64 := func(v int64) int64 {
		if v < 0 {
			v = -v
		}
		if narrow {
			v = int64(int32(v))
		}
		return v
	}
	neg := func(v int64) int64 {
		if narrow {
			return int64(-int32(v))
		}
		return -v
	}
	isBefore, isZero := false, true
	switch style {
	case SQLStandard:
		hasNeg := year < 0 || mon < 0 || mday < 0 || hour < 0 || min < 0 || sec < 0 || fsec < 0
		hasPos := year > 0 || mon > 0 || mday > 0 || hour > 0 || min > 0 || sec > 0 || fsec > 0
		hasYM := year != 0 || mon != 0
		hasDT := mday != 0 || hour != 0 || min != 0 || sec != 0 || fsec != 0
		std := !(hasNeg && hasPos) && !(hasYM && hasDT)
		if hasNeg && std {
			dst = append(dst, '-')
			year, mon, mday, hour, min, sec, fsec = neg(year), neg(mon), neg(mday), neg(hour), neg(min), neg(sec), neg(fsec)
		}
		switch {
		case !hasNeg && !hasPos:
			dst = append(dst, '0')
		case !std:
			ys, ds, ss := byte('+'), byte('+'), byte('+')
			if year < 0 || mon < 0 {
				ys = '-'
			}
			if mday < 0 {
				ds = '-'
			}
			if hour < 0 || min < 0 || sec < 0 || fsec < 0 {
				ss = '-'
			}
			dst = append(dst, ys)
			dst = appendI(dst, abs64(year))
			dst = append(dst, '-')
			dst = appendI(dst, abs64(mon))
			dst = append(dst, ' ', ds)
			dst = appendI(dst, abs64(mday))
			dst = append(dst, ' ', ss)
			dst = appendI(dst, abs64(hour))
			dst = append(dst, ':')
			dst = appendPad64(dst, abs64(min), 2)
			dst = append(dst, ':')
			dst = appendSeconds(dst, int(sec), int(fsec), true)
		case hasYM:
			dst = appendI(dst, year)
			dst = append(dst, '-')
			dst = appendI(dst, mon)
		case mday != 0:
			dst = appendI(dst, mday)
			dst = append(dst, ' ')
			dst = appendI(dst, hour)
			dst = append(dst, ':')
			dst = appendPad64(dst, min, 2)
			dst = append(dst, ':')
			dst = appendSeconds(dst, int(sec), int(fsec), true)
		default:
			dst = appendI(dst, hour)
			dst = append(dst, ':')
			dst = appendPad64(dst, min, 2)
			dst = append(dst, ':')
			dst = appendSeconds(dst, int(sec), int(fsec), true)
		}
	case ISO8601:
		if year == 0 && mon == 0 && mday == 0 && hour == 0 && min == 0 && sec == 0 && fsec == 0 {
			return append(dst, "PT0S"...)
		}
		dst = append(dst, 'P')
		part := func(v int64, unit byte) {
			if v != 0 {
				dst = appendI(dst, v)
				dst = append(dst, unit)
			}
		}
		part(year, 'Y')
		part(mon, 'M')
		part(mday, 'D')
		if hour != 0 || min != 0 || sec != 0 || fsec != 0 {
			dst = append(dst, 'T')
		}
		part(hour, 'H')
		part(min, 'M')
		if sec != 0 || fsec != 0 {
			if sec < 0 || fsec < 0 {
				dst = append(dst, '-')
			}
			dst = appendSeconds(dst, int(sec), int(fsec), false)
			dst = append(dst, 'S')
		}
	case PostgresStyle:
		part := func(v int64, unit string) {
			if v == 0 {
				return
			}
			if !isZero {
				dst = append(dst, ' ')
			}
			if isBefore && v > 0 {
				dst = append(dst, '+')
			}
			dst = appendI(dst, v)
			dst = append(dst, ' ')
			dst = append(dst, unit...)
			if v != 1 {
				dst = append(dst, 's')
			}
			isBefore = v < 0
			isZero = false
		}
		part(year, "year")
		part(mon, "mon")
		part(mday, "day")
		if isZero || hour != 0 || min != 0 || sec != 0 || fsec != 0 {
			minus := hour < 0 || min < 0 || sec < 0 || fsec < 0
			if !isZero {
				dst = append(dst, ' ')
			}
			if minus {
				dst = append(dst, '-')
			} else if isBefore {
				dst = append(dst, '+')
			}
			dst = appendPad64(dst, abs64(hour), 2)
			dst = append(dst, ':')
			dst = appendPad64(dst, abs64(min), 2)
			dst = append(dst, ':')
			dst = appendSeconds(dst, int(sec), int(fsec), true)
		}
	case PostgresVerbose:
		dst = append(dst, '@')
		part := func(v int64, unit string) {
			if v == 0 {
				return
			}
			if isZero {
				isBefore = v < 0
				v = abs64(v)
			} else if isBefore {
				v = neg(v)
			}
			dst = append(dst, ' ')
			dst = appendI(dst, v)
			dst = append(dst, ' ')
			dst = append(dst, unit...)
			if v != 1 {
				dst = append(dst, 's')
			}
			isZero = false
		}
		part(year, "year")
		part(mon, "mon")
		part(mday, "day")
		part(hour, "hour")
		part(min, "min")
		if sec != 0 || fsec != 0 {
			dst = append(dst, ' ')
			if sec < 0 || (sec == 0 && fsec < 0) {
				if isZero {
					isBefore = true
				} else if !isBefore {
					dst = append(dst, '-')
				}
			} else if isBefore {
				dst = append(dst, '-')
			}
			dst = appendSeconds(dst, int(sec), int(fsec), false)
			dst = append(dst, " sec"...)
			if abs64(sec) != 1 || fsec != 0 {
				dst = append(dst, 's')
			}
			isZero = false
		}
		if isZero {
			dst = append(dst, " 0"...)
		}
		if isBefore {
			dst = append(dst, " ago"...)
		}
	}
	return dst
}
