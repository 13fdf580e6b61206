//! Host text made inert in WeCom markdown.
//!
//! WeCom documents no escape syntax for its markdown (a backslash may well
//! be shown as itself), so characters that could start markup are replaced
//! by their full-width look-alikes, which every WeCom client shows as plain
//! text. Only what could be markup is replaced, so task names, paths and
//! stderr stay readable:
//!
//! | character | replaced | by |
//! |-----------|----------|----|
//! | `*` `` ` `` `<` `\` | everywhere (bold, code, `<font>`, `<@userid>`, autolinks, HTML; a backslash that could escape the plugin's own markup) | `＊` `｀` `＜` `＼` |
//! | `_` | unless between two letters or digits (`snake_case` stays; CommonMark never reads an intraword `_` as emphasis) | `＿` |
//! | `]` | when the next non-blank character is `(`, `[` or `:` (links, images, reference links and their definitions; `name[i=3]` of a sweep member stays) | `］` |
//! | `&` | when it starts an entity (`&lt;`, `&#60;`) | `＆` |
//! | `#` `>` `=` `-` `+` | first on a line, after blanks (headings, quotes, setext underlines, lists, rules) | `＃` `＞` `＝` `－` `＋` |
//!
//! Left alone: `~` (WeCom has no strikethrough), parentheses, a `#` or `>`
//! within a line, and indentation (an indented line may show in a code
//! block, nothing worse).

/// `text` with every character that could be read as markdown markup
/// replaced by a full-width look-alike (see the module's table).
pub fn markdown(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut line_start = true;
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
        let rest = chars.get(i + 1..).unwrap_or_default();
        let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        let replaced = match c {
            '*' => '＊',
            '`' => '｀',
            '<' => '＜',
            '\\' => '＼',
            '_' if !(word(prev) && word(rest.first().copied())) => '＿',
            ']' if matches!(next_non_blank(rest), Some('(' | '[' | ':')) => '］',
            '&' if starts_entity(rest) => '＆',
            '#' if line_start => '＃',
            '>' if line_start => '＞',
            '=' if line_start => '＝',
            '-' if line_start => '－',
            '+' if line_start => '＋',
            other => other,
        };
        out.push(replaced);
        line_start = matches!(c, '\n' | '\r') || (line_start && matches!(c, ' ' | '\t'));
    }
    out
}

/// The first character of `rest` that is not a space, tab or line break.
fn next_non_blank(rest: &[char]) -> Option<char> {
    rest.iter()
        .copied()
        .find(|c| !matches!(c, ' ' | '\t' | '\n' | '\r'))
}

/// Whether `rest` (what follows an `&`) makes it an entity: `name;`,
/// `#60;` or `#x3C;`.
fn starts_entity(rest: &[char]) -> bool {
    let n = rest
        .iter()
        .take(33)
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '#')
        .count();
    (1..=32).contains(&n) && rest.get(n) == Some(&';')
}

#[cfg(test)]
mod tests {
    use super::markdown;

    #[test]
    fn markup_characters_become_look_alikes() {
        assert_eq!(markdown("**x** `y` \\"), "＊＊x＊＊ ｀y｀ ＼");
        assert_eq!(
            markdown("<font color=\"info\">ok</font> <@all>"),
            "＜font color=\"info\">ok＜/font> ＜@all>"
        );
        assert_eq!(markdown("[a](http://evil)"), "[a］(http://evil)");
        assert_eq!(
            markdown("[a] (x) [b][r] [r]: x"),
            "[a］ (x) [b］[r］ [r］: x"
        );
        assert_eq!(
            markdown("&lt;b&gt; &#60; &#x3C;"),
            "＆lt;b＆gt; ＆#60; ＆#x3C;"
        );
    }

    #[test]
    fn what_cannot_be_markup_is_kept() {
        for kept in [
            "train_resnet_v2",
            "many[i=3,lr=0.1]",
            "task-failed #7",
            "a -> b >= c",
            "a&b=c; x & y",
            "~/data (copy)",
            "任务 3（训练）失败",
        ] {
            assert_eq!(markdown(kept), kept);
        }
        assert_eq!(markdown("__init__ _x_"), "＿＿init＿＿ ＿x＿");
        assert_eq!(markdown("一_二"), "一_二", "between CJK letters too");
    }

    #[test]
    fn line_starts_lose_headings_quotes_lists_and_rules() {
        assert_eq!(
            markdown("# h\n  > q\n- l\n+ p\nt\n===\n---\na # b > c"),
            "＃ h\n  ＞ q\n－ l\n＋ p\nt\n＝==\n－--\na # b > c"
        );
        assert_eq!(markdown("\r\n#x"), "\r\n＃x");
    }
}
