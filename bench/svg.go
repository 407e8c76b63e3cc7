package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// chartLine is one store's curve: the fraction of its expiring documents
// still held, over ms since the threshold.
type chartLine struct {
	name string
	xs   []float64
	ys   []float64
}

func lines2chart[L any](ls []L, f func(L) (string, []point, int, int)) []chartLine {
	var out []chartLine
	for _, l := range ls {
		name, pts, floor, k := f(l)
		cl := chartLine{name: name}
		for _, p := range pts {
			cl.xs = append(cl.xs, p.Ms)
			cl.ys = append(cl.ys, math.Max(0, float64(p.Remaining-floor))/float64(k))
		}
		out = append(out, cl)
	}
	return out
}

var svgColors = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#7f7f7f", "#8c564b"}

// niceStep returns a round tick step for a span.
func niceStep(span float64, ticks int) float64 {
	raw := span / float64(ticks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// svgChart draws the lines as a step chart: x ms since the threshold, y the
// fraction remaining. Hand-written SVG, no dependencies.
func svgChart(title string, ls []chartLine) string {
	const W, H, left, right, top, bottom = 960.0, 520.0, 70.0, 170.0, 50.0, 60.0
	pw, ph := W-left-right, H-top-bottom
	xmin, xmax := 0.0, 1.0
	for _, l := range ls {
		for _, x := range l.xs {
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		}
	}
	xmax *= 1.03
	px := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return top + (1-y)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="25" font-size="15">%s</text>`+"\n", left, html.EscapeString(title))
	step := niceStep(xmax-xmin, 8)
	for x := math.Ceil(xmin/step) * step; x <= xmax; x += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", px(x), top, px(x), top+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", px(x), top+ph+18, x)
	}
	for i := 0; i <= 4; i++ {
		y := float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(y), left+pw, py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%d%%</text>`+"\n", left-6, py(y)+4, i*25)
	}
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">ms since the threshold</text>`+"\n", left+pw/2, H-15)
	fmt.Fprintf(&b, `<text transform="translate(18 %.0f) rotate(-90)" text-anchor="middle">expiring documents remaining</text>`+"\n", top+ph/2)
	for i, l := range ls {
		c := svgColors[i%len(svgColors)]
		var pts []string
		for j := range l.xs {
			if j > 0 { // step: hold the previous count until this sample
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l.xs[j]), py(l.ys[j-1])))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l.xs[j]), py(l.ys[j])))
		}
		if len(l.xs) > 0 {
			pts = append([]string{fmt.Sprintf("%.1f,%.1f", px(xmin), py(l.ys[0]))}, pts...)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		ly := top + 20 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/>`+"\n", left+pw+15, ly, left+pw+40, ly, c)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", left+pw+46, ly+4, html.EscapeString(l.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
