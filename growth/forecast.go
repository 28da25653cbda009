package growth

import (
	"fmt"
	"math"
	"time"
)

// The forecast model (docs/commands/growth.md#forecast): a day's volume is
// a linear trend times a day-of-week factor,
//
//	y(t) = (a + b·t) · f(weekday(t))
//
// fitted to the last MaxHistoryDays complete days (t counts days from the
// first): the factors start at 1; the trend is the least-squares line
// through y(t)/f(weekday(t)); each factor is then the sum of y(t) over
// the days of its weekday divided by the sum of the trend a+b·t on them
// (days where the trend is not above 0 left out), scaled so the seven
// average 1 (a weekday without a day keeps 1); and the trend is fitted again through the new
// deseasonalised series, the two steps repeated until no factor moves by
// more than 1e-12 (at most 100 rounds): a series that is exactly such a
// product is fitted back exactly. A prediction below 0 is 0.
//
// Its honesty check: the model is first fitted without the last HoldBack
// days (14 when there are at least 42 days, else 7), which it then
// predicts; the error on them (MAPE: the mean of |predicted-actual|/actual
// over the held-back days with actual > 0; the largest absolute and
// relative errors) is reported. The forecast itself is fitted on every
// day. With fewer than MinHistoryDays days there is no forecast.

// Forecast limits.
const (
	MinHistoryDays = 14
	MaxHistoryDays = 56
	// Horizon is how many days a forecast predicts (90, and more for the
	// days between the history's end and the report's).
	Horizon = 120
)

// Model is a fitted trend and weekday factors.
type Model struct {
	// Start is day 0 of the trend; Level (a) its value there and Slope
	// (b) its change per day, in the series' unit.
	Start time.Time `json:"start"`
	Level float64   `json:"level"`
	Slope float64   `json:"slope_per_day"`
	// Factors are the weekday factors, Monday first.
	Factors [7]float64 `json:"weekday_factors"`
}

// weekdayIndex is Monday 0 ... Sunday 6.
func weekdayIndex(t time.Time) int { return (int(t.Weekday()) + 6) % 7 }

// Predict returns the model's value for day t (UTC midnight).
func (m *Model) Predict(t time.Time) float64 {
	x := t.Sub(m.Start).Hours() / 24
	v := (m.Level + m.Slope*x) * m.Factors[weekdayIndex(t)]
	return math.Max(v, 0)
}

// Fit fits the model to the daily values ys of consecutive days from start.
func Fit(start time.Time, ys []float64) Model {
	m := Model{Start: start}
	for i := range m.Factors {
		m.Factors[i] = 1
	}
	n := len(ys)
	if n == 0 {
		return m
	}
	day := func(i int) time.Time { return start.AddDate(0, 0, i) }
	line := func() {
		var sx, sy, sxx, sxy float64
		for i, y := range ys {
			x, v := float64(i), y/m.Factors[weekdayIndex(day(i))]
			sx, sy, sxx, sxy = sx+x, sy+v, sxx+x*x, sxy+x*v
		}
		N := float64(n)
		den := N*sxx - sx*sx
		if den == 0 {
			m.Level, m.Slope = sy/N, 0
			return
		}
		m.Slope = (N*sxy - sx*sy) / den
		m.Level = (sy - m.Slope*sx) / N
	}
	line()
	for range fitRounds {
		prev := m.Factors
		m.factors(ys, day)
		line()
		settled := true
		for w := range 7 {
			if math.Abs(m.Factors[w]-prev[w]) > 1e-12 {
				settled = false
			}
		}
		if settled {
			break
		}
	}
	return m
}

// fitRounds bounds the rounds of Fit's alternating fits.
const fitRounds = 100

// factors sets the weekday factors from the trend.
func (m *Model) factors(ys []float64, day func(int) time.Time) {
	var sum, trend [7]float64
	var cnt [7]int
	for i, y := range ys {
		tr := m.Level + m.Slope*float64(i)
		if tr <= 0 {
			continue
		}
		w := weekdayIndex(day(i))
		sum[w] += y
		trend[w] += tr
		cnt[w]++
	}
	var mean float64
	k := 0
	for w := range 7 {
		if cnt[w] > 0 {
			m.Factors[w] = sum[w] / trend[w]
			mean += m.Factors[w]
			k++
		}
	}
	if k > 0 && mean > 0 {
		mean /= float64(k)
		for w := range 7 {
			if cnt[w] > 0 {
				m.Factors[w] /= mean
			}
			if m.Factors[w] <= 0 {
				m.Factors[w] = 1
			}
		}
	}
}

// Backtest is the model's error on the held-back days.
type Backtest struct {
	FitDays  int           `json:"fit_days"`
	HeldBack int           `json:"held_back_days"`
	Days     []BacktestDay `json:"days"`
	// MAPE is the mean absolute percentage error (in %) over the held-back
	// days with an actual value above 0; MaxAbsError the largest
	// |predicted-actual|, MaxAPE the largest of those percentages.
	MAPE        float64 `json:"mape_percent"`
	MaxAbsError float64 `json:"max_abs_error"`
	MaxAPE      float64 `json:"max_ape_percent"`
}

// BacktestDay is one held-back day.
type BacktestDay struct {
	Day       string  `json:"day"`
	Actual    float64 `json:"actual"`
	Predicted float64 `json:"predicted"`
}

// Series is a forecast of one daily series.
type Series struct {
	Model    Model    `json:"model"`
	Backtest Backtest `json:"backtest"`
	// Days are the next Horizon days' predictions; Next30 and Next90 the
	// sums of the first 30 and 90.
	Days   []ForecastDay `json:"days"`
	Next30 float64       `json:"next_30_days"`
	Next90 float64       `json:"next_90_days"`
}

// ForecastDay is one predicted day.
type ForecastDay struct {
	Day   string  `json:"day"`
	Value float64 `json:"value"`
}

// HoldBack is how many of n days the backtest holds back.
func HoldBack(n int) int {
	if n >= 42 {
		return 14
	}
	return 7
}

// ForecastSeries backtests and forecasts ys, the values of consecutive
// days from start, for Horizon days after the last. It returns an error when
// there are fewer than MinHistoryDays values.
func ForecastSeries(start time.Time, ys []float64) (*Series, error) {
	if len(ys) < MinHistoryDays {
		return nil, fmt.Errorf("%d complete days of history, %d needed for a forecast", len(ys), MinHistoryDays)
	}
	if len(ys) > MaxHistoryDays {
		start = start.AddDate(0, 0, len(ys)-MaxHistoryDays)
		ys = ys[len(ys)-MaxHistoryDays:]
	}
	s := &Series{}
	h := HoldBack(len(ys))
	fit := len(ys) - h
	bm := Fit(start, ys[:fit])
	s.Backtest = Backtest{FitDays: fit, HeldBack: h}
	var apeSum float64
	apeN := 0
	for i := fit; i < len(ys); i++ {
		t := start.AddDate(0, 0, i)
		p := bm.Predict(t)
		s.Backtest.Days = append(s.Backtest.Days, BacktestDay{Day: t.Format(time.DateOnly), Actual: ys[i], Predicted: p})
		e := math.Abs(p - ys[i])
		s.Backtest.MaxAbsError = math.Max(s.Backtest.MaxAbsError, e)
		if ys[i] > 0 {
			ape := 100 * e / ys[i]
			apeSum += ape
			apeN++
			s.Backtest.MaxAPE = math.Max(s.Backtest.MaxAPE, ape)
		}
	}
	if apeN > 0 {
		s.Backtest.MAPE = apeSum / float64(apeN)
	}
	s.Model = Fit(start, ys)
	last := start.AddDate(0, 0, len(ys)-1)
	for i := 1; i <= Horizon; i++ {
		t := last.AddDate(0, 0, i)
		v := s.Model.Predict(t)
		s.Days = append(s.Days, ForecastDay{Day: t.Format(time.DateOnly), Value: v})
		if i <= 30 {
			s.Next30 += v
		}
		s.Next90 += v
	}
	return s, nil
}
