"""Pages shaped as rustdoc writes them (a type, its own members, a trait implementation whose members are the
trait's, copied, and a blanket implementation), for the tests of kbflow.sources.web.apidocs."""

from __future__ import annotations

TRAIT = "https://doc.rust-lang.org/core/iter/trait.Iterator.html"


def member(name: str, doc: str, copied: bool) -> str:
    more = f' <a href="{TRAIT}#method.{name}">Read more</a>' if copied else ""
    return (
        f'<details class="toggle method-toggle" open><summary><section id="method.{name}" class="method trait-impl">'
        f'<h4 class="code-header">fn <a href="{TRAIT}#method.{name}" class="fn">{name}</a>(&amp;mut self)</h4>'
        f"</section></summary><div class='docblock'>{doc}{more}</div></details>"
    )


def impl_block(trait: str, members: str) -> str:
    return (
        f'<details class="toggle implementors-toggle" open><summary><section id="impl-{trait}" class="impl">'
        f'<h3 class="code-header">impl&lt;K&gt; <a class="trait" href="{TRAIT}">{trait}</a> for Keys&lt;K&gt;</h3>'
        f'</section></summary><div class="impl-items">{members}</div></details>'
    )


def page(generator: str = "rustdoc") -> str:
    iterator = impl_block(
        "Iterator",
        member("next", "Advances the iterator and returns the next value.", copied=True)
        + member("is_sorted", "Checks if the elements of this iterator are sorted.", copied=True)
        + member("count", "Counts the keys without walking them: the map knows its length.", copied=False),
    )
    blanket = impl_block("From", member("from", "Returns the argument unchanged.", copied=False))
    return (
        f'<!DOCTYPE html><html><head><meta name="generator" content="{generator}"><title>Keys</title></head>'
        '<body><main><section id="main-content"><h1>Struct Keys</h1>'
        '<div class="docblock"><p>An iterator over the keys of an IndexMap, in their order.</p></div>'
        '<h2 id="implementations">Implementations</h2><div id="implementations-list">'
        '<details class="toggle implementors-toggle" open><summary><section class="impl">'
        '<h3 class="code-header">impl&lt;K&gt; Keys&lt;K&gt;</h3></section></summary><div class="impl-items">'
        '<details class="toggle method-toggle" open><summary><section id="method.as_slice" class="method">'
        '<h4 class="code-header">pub fn as_slice(&amp;self)</h4></section></summary>'
        "<div class='docblock'>Returns a slice of the remaining keys.</div></details></div></details></div>"
        '<h2 id="trait-implementations">Trait Implementations</h2>'
        f'<div id="trait-implementations-list">{iterator}</div>'
        '<h2 id="blanket-implementations">Blanket Implementations</h2>'
        f'<div id="blanket-implementations-list">{blanket}</div>'
        "</section></main></body></html>"
    )
