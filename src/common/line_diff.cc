#include "common/line_diff.h"

#include <algorithm>
#include <cstdint>

namespace ward {
namespace {

// One line of the edit script: kept (in both), removed (from a) or added (from b).
struct Op {
  char kind;  // ' ', '-', '+'
  size_t a;   // index in a (for ' ' and '-')
  size_t b;   // index in b (for ' ' and '+')
};

// Myers' greedy forward search over a[lo_a, hi_a) and b[lo_b, hi_b), keeping each round's
// frontier for the walk back; nullopt-like (false) past max_d rounds.
bool Myers(const std::vector<std::string_view>& a, size_t lo_a, size_t hi_a,
           const std::vector<std::string_view>& b, size_t lo_b, size_t hi_b, size_t max_d,
           std::vector<Op>* out) {
  const long n = static_cast<long>(hi_a - lo_a), m = static_cast<long>(hi_b - lo_b);
  const long max = n + m;
  const long offset = max + 1;
  std::vector<long> v(static_cast<size_t>(2 * max + 3), 0);
  std::vector<std::vector<long>> trace;
  long d_found = -1;
  for (long d = 0; d <= max && d <= static_cast<long>(max_d); ++d) {
    // The frontier as this round starts, diagonals -d-1..d+1 only (all the walk back reads).
    trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
    for (long k = -d; k <= d; k += 2) {
      long x;
      if (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1])) {
        x = v[offset + k + 1];
      } else {
        x = v[offset + k - 1] + 1;
      }
      long y = x - k;
      while (x < n && y < m && a[lo_a + x] == b[lo_b + y]) {
        ++x;
        ++y;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        d_found = d;
        break;
      }
    }
    if (d_found >= 0) break;
  }
  if (d_found < 0) return false;
  // Walk back through the frontiers.
  std::vector<Op> rev;
  long x = n, y = m;
  for (long d = d_found; d > 0; --d) {
    const std::vector<long>& pv = trace[static_cast<size_t>(d)];
    auto at = [&](long diag) { return pv[static_cast<size_t>(diag + d + 1)]; };
    const long k = x - y;
    long prev_k;
    if (k == -d || (k != d && at(k - 1) < at(k + 1))) {
      prev_k = k + 1;
    } else {
      prev_k = k - 1;
    }
    const long prev_x = at(prev_k);
    const long prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x;
      --y;
      rev.push_back({' ', lo_a + x, lo_b + y});
    }
    if (x == prev_x) {
      --y;
      rev.push_back({'+', 0, lo_b + y});
    } else {
      --x;
      rev.push_back({'-', lo_a + x, 0});
    }
  }
  while (x > 0 && y > 0) {
    --x;
    --y;
    rev.push_back({' ', lo_a + x, lo_b + y});
  }
  out->insert(out->end(), rev.rbegin(), rev.rend());
  return true;
}

std::vector<Op> EditScript(const std::vector<std::string_view>& a,
                           const std::vector<std::string_view>& b, size_t max_edits) {
  std::vector<Op> ops;
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) {
    ++suf;
  }
  for (size_t i = 0; i < pre; ++i) ops.push_back({' ', i, i});
  const size_t hi_a = a.size() - suf, hi_b = b.size() - suf;
  if (!Myers(a, pre, hi_a, b, pre, hi_b, max_edits, &ops)) {
    for (size_t i = pre; i < hi_a; ++i) ops.push_back({'-', i, 0});
    for (size_t j = pre; j < hi_b; ++j) ops.push_back({'+', 0, j});
  }
  for (size_t i = 0; i < suf; ++i) ops.push_back({' ', hi_a + i, hi_b + i});
  return ops;
}

std::string Range(size_t start, size_t count) {
  // Unified diff: 1-based start; an empty range names the line before it.
  std::string s = std::to_string(count == 0 ? start : start + 1);
  if (count != 1) s += "," + std::to_string(count);
  return s;
}

// A last line that lost or gained its newline differs even when its text does not.
void MarkFinalNewlineChange(const TextLines& ta, const TextLines& tb, std::vector<Op>* ops) {
  if (ta.missing_final_newline == tb.missing_final_newline) return;
  const size_t a_size = ta.lines.size(), b_size = tb.lines.size();
  for (Op& op : *ops) {
    if (op.kind == ' ' && ((op.a + 1 == a_size && ta.missing_final_newline) ||
                           (op.b + 1 == b_size && tb.missing_final_newline))) {
      const Op keep = op;
      op = {'-', keep.a, 0};
      ops->insert(ops->begin() + (&op - ops->data()) + 1, Op{'+', 0, keep.b});
      break;
    }
  }
}

// The ops [start, end) of one hunk.
struct Hunk {
  size_t start;
  size_t end;
};

// The hunk of the change at `i`: from `ctx` kept lines before it to `ctx` after the last change
// that is within 2*ctx kept lines of the previous one.
Hunk HunkAround(const std::vector<Op>& ops, size_t i, size_t ctx) {
  size_t start = i >= ctx ? i - ctx : 0;
  while (start < i && ops[start].kind != ' ') ++start;
  size_t end = i;
  size_t last_change = i;
  for (size_t j = i; j < ops.size(); ++j) {
    if (ops[j].kind != ' ') {
      last_change = j;
    } else if (j - last_change > 2 * ctx) {
      break;
    }
    end = j + 1;
  }
  end = std::min(end, last_change + 1 + ctx);
  end = std::min(end, ops.size());
  return {start, end};
}

// Where a side's range starts when the hunk has none of its lines: after the last line of that
// side before the hunk. `skip` is the kind of op without a line of that side ('+' for a, '-'
// for b).
size_t StartBefore(const std::vector<Op>& ops, size_t start, char skip) {
  for (size_t j = start; j > 0; --j) {
    const Op& op = ops[j - 1];
    if (op.kind != skip) return (skip == '+' ? op.a : op.b) + 1;
  }
  return 0;
}

// "@@ -a,n +b,m @@" and a newline.
std::string HunkHeader(const std::vector<Op>& ops, const Hunk& hunk) {
  size_t a_start = 0, b_start = 0, a_count = 0, b_count = 0;
  bool a_set = false, b_set = false;
  for (size_t j = hunk.start; j < hunk.end; ++j) {
    const Op& op = ops[j];
    if (op.kind != '+') {
      if (!a_set) a_start = op.a, a_set = true;
      ++a_count;
    }
    if (op.kind != '-') {
      if (!b_set) b_start = op.b, b_set = true;
      ++b_count;
    }
  }
  // Only additions (or only removals): the range names the line before them.
  if (!a_set) a_start = StartBefore(ops, hunk.start, '+');
  if (!b_set) b_start = StartBefore(ops, hunk.start, '-');
  return "@@ -" + Range(a_start, a_count) + " +" + Range(b_start, b_count) + " @@\n";
}

// The hunk's lines, each with its kind, and the marker after a last line without a newline.
void RenderHunk(const TextLines& ta, const TextLines& tb, const std::vector<Op>& ops,
                const Hunk& hunk, std::string (*render)(std::string_view line), std::string* out) {
  const std::vector<std::string_view>& a = ta.lines;
  const std::vector<std::string_view>& b = tb.lines;
  for (size_t j = hunk.start; j < hunk.end; ++j) {
    const Op& op = ops[j];
    const std::string_view line = op.kind == '+' ? b[op.b] : a[op.a];
    *out += op.kind;
    *out += render(line);
    *out += '\n';
    const bool last_of_a = op.kind != '+' && op.a + 1 == a.size() && ta.missing_final_newline;
    const bool last_of_b = op.kind != '-' && op.b + 1 == b.size() && tb.missing_final_newline;
    if ((op.kind == '-' && last_of_a) || (op.kind == '+' && last_of_b) ||
        (op.kind == ' ' && (last_of_a || last_of_b))) {
      *out += "\\ No newline at end of file\n";
    }
  }
}

}  // namespace

TextLines SplitLines(std::string_view text) {
  TextLines t;
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    if (nl == std::string_view::npos) {
      t.lines.push_back(text.substr(i));
      t.missing_final_newline = true;
      break;
    }
    t.lines.push_back(text.substr(i, nl - i));
    i = nl + 1;
  }
  return t;
}

std::string UnifiedHunks(const TextLines& ta, const TextLines& tb, int context,
                         std::string (*render)(std::string_view line), size_t max_edits) {
  std::vector<Op> ops = EditScript(ta.lines, tb.lines, max_edits);
  MarkFinalNewlineChange(ta, tb, &ops);
  std::string out;
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  size_t i = 0;
  while (i < ops.size()) {
    if (ops[i].kind == ' ') {
      ++i;
      continue;
    }
    const Hunk hunk = HunkAround(ops, i, ctx);
    out += HunkHeader(ops, hunk);
    RenderHunk(ta, tb, ops, hunk, render, &out);
    i = hunk.end;
  }
  return out;
}

}  // namespace ward
