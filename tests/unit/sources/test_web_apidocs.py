"""API references read by their generators' own structure (kbflow.sources.web.apidocs), on pages shaped as
rustdoc, Javadoc, Doxygen, TypeDoc, Sphinx, pdoc, pdoc3 and mkdocstrings write them."""

from __future__ import annotations

import json
import re

from rustdoc_pages import page as _page

from kbflow.sources.web import extract
from kbflow.sources.web.apidocs import read_api_page
from kbflow.sources.web.apidocs.doxygen import CROSS_REFERENCES
from kbflow.sources.web.apidocs.source_views import SOURCE_CODE
from kbflow.sources.web.tree import parse


def test_a_traits_members_copied_onto_a_type_are_one_pointer_line():
    text = extract(_page()).text
    assert "Members documented on Iterator: next, is_sorted." in text
    assert "Advances the iterator" not in text and "Checks if the elements" not in text
    # the type's own documentation of a trait method is its own: kept whole
    assert "Counts the keys without walking them" in text
    # a blanket implementation is never the type's own: its members are pointers whatever their docs
    assert "Members documented on From: from." in text and "Returns the argument unchanged" not in text
    # the type's own members, its heading and the impl headings stay
    assert "Returns a slice of the remaining keys." in text
    assert "impl<K> Iterator for Keys<K>" in text


def test_the_pointer_lines_blocks_keep_css_paths_that_select_their_element():
    page = extract(_page())
    pointer = next(b for b in page.blocks if page.text[b[0] : b[1]].startswith("Members documented on Iterator"))
    assert pointer[2].startswith("html > body > main > section#main-content > div#trait-implementations-list")
    assert pointer[2].endswith("> details > div")  # the impl block's own list of items


def test_only_rustdocs_pages_are_folded():
    text = extract(_page(generator="Sphinx 7.2")).text
    assert "Advances the iterator" in text and "Members documented on" not in text
    root = parse(_page())[0]
    assert read_api_page(root, "doxygen") == 0
    assert read_api_page(root, "rustdoc") == 2


JAVADOC = (
    '<!DOCTYPE html><html><head><meta name="generator" content="javadoc/ClassWriterImpl"><title>NamePredicate</title>'
    '</head><body><main><h1>Class NamePredicate</h1><section class="method-details"><h2>Method Details</h2>'
    '<section class="detail" id="test(java.lang.Thread)"><h3>test</h3>'
    '<div class="member-signature">public boolean test(Thread thread)</div>'
    '<div class="block"><span class="descfrm-type-label">Description copied from interface:&nbsp;'
    '<code><a href="ThreadPredicate.html#test">ThreadPredicate</a></code></span></div>'
    '<div class="block">Evaluates this predicate on the given thread.</div>'
    '<dl class="notes"><dt>Specified by:</dt><dd><code>test</code> in interface ThreadPredicate</dd></dl>'
    "</section>"
    '<section class="detail" id="name()"><h3>name</h3><div class="member-signature">public String name()</div>'
    '<div class="block">The name this predicate matches.</div></section></section></main></body></html>'
)


def test_a_javadoc_description_copied_from_an_interface_is_a_pointer():
    text = extract(JAVADOC).text
    assert "Documented on ThreadPredicate." in text
    assert "Evaluates this predicate" not in text and "Description copied from" not in text
    assert "public boolean test(Thread thread)" in text and "Specified by:" in text  # signature and notes kept
    assert "The name this predicate matches." in text  # a method's own description stays
    assert "Evaluates this predicate" in extract(JAVADOC.replace("javadoc/ClassWriterImpl", "Sphinx")).text


def _typedoc_member(name: str, doc: str, base: str | None) -> str:
    inherited = " tsd-is-inherited" if base else ""
    source = (
        f'<p>Inherited from <a href="{base}.html">{base}</a>.<a href="{base}.html#{name}">{name}</a></p>'
        if base
        else ""
    )
    return (
        f'<section class="tsd-panel tsd-member{inherited}"><a id="{name}" class="tsd-anchor"></a>'
        f'<h3 class="tsd-anchor-link"><span>{name}</span><code class="tsd-tag">Optional</code></h3>'
        f'<div class="tsd-comment tsd-typography"><p>{doc}</p></div>'
        f'<aside class="tsd-sources">{source}<ul><li>Defined in src/index.d.ts:19</li></ul></aside></section>'
    )


def test_typedocs_inherited_members_are_one_line_where_the_first_stood():
    members = (
        _typedoc_member("code", "An error code, copied from the base.", "CommanderError")
        + _typedoc_member("hint", "What to try instead.", None)
        + _typedoc_member("exitCode", "The exit status, copied from the base.", "CommanderError")
    )
    html = (
        "<!DOCTYPE html><html><head><title>InvalidArgumentError</title></head><body><main>"
        f'<h1>Class InvalidArgumentError</h1><section class="tsd-panel-group tsd-member-group"><h2>Properties</h2>'
        f"{members}</section></main></body></html>"
    )
    text = extract(html).text
    assert "Inherited from CommanderError: code, exitCode." in text
    assert "copied from the base" not in text
    assert "What to try instead." in text
    assert text.index("Inherited from CommanderError") < text.index("What to try instead.")


def _doxygen_row(anchor: str, kind: str, name: str, brief: str | None, group: str | None) -> str:
    inherit = f" inherit {group}" if group else ""
    row = (
        f'<tr class="memitem:{anchor}{inherit}"><td class="memItemLeft">{kind}&#160;</td>'
        f'<td class="memItemRight"><a class="el" href="c.html#{anchor}">{name}</a> ()</td></tr>'
    )
    if brief:
        row += f'<tr class="memdesc:{anchor}{inherit}"><td class="mdescLeft">&#160;</td><td class="mdescRight">{brief}'
        row += f' <a href="c.html#{anchor}">More...</a><br /></td></tr>'
    return row + f'<tr class="separator:{anchor}{inherit}"><td class="memSeparator" colspan="2">&#160;</td></tr>'


def test_typedocs_index_lists_are_one_line_each():
    """TypeDoc opens each page with an index of what it documents, one link a member: one line naming them."""

    def link(href: str, name: str) -> str:
        return f'<a href="{href}" class="tsd-index-link"><svg class="tsd-kind-icon"></svg><span>{name}</span></a>'

    methods = link("Store.html#getState", "get<wbr/>State") + link("Store.html#subscribe", "subscribe")
    pages = link("functions/compose.html", "compose") + link("functions/createStore.html", "createStore")
    html = (
        '<html><head><title>Store | redux</title></head><body><div class="col-content"><h1>Interface Store</h1>'
        '<section class="tsd-index-section"><h3 class="tsd-index-heading">Methods</h3>'
        f'<div class="tsd-index-list">{methods}</div></section>'
        '<section class="tsd-index-section"><h3 class="tsd-index-heading">Functions</h3>'
        f'<div class="tsd-index-list">{pages}</div></section>'
        '<section class="tsd-panel"><h3>getState</h3><p>Reads the state tree.</p></section></div></body></html>'
    )
    text = extract(html).text
    assert "Documented below: getState, subscribe." in text
    assert "Documented on their pages: compose, createStore." in text
    assert "Reads the state tree." in text


def test_doxygens_member_summaries_and_inherited_member_lists_are_one_line_each():
    group = "pub_methods_classgeo_1_1Shape"
    rows = (
        '<tr class="heading"><td colspan="2"><h2 class="groupheader">Public Member Functions</h2></td></tr>'
        + _doxygen_row("a1", "double", "radius", "The circle's radius.", None)
        + f'<tr class="inherit_header {group}"><td colspan="2" onclick="javascript:toggleInherit(\'{group}\')">'
        '<img src="closed.png" alt="-"/>&#160;Public Member Functions inherited from '
        '<a class="el" href="classgeo_1_1Shape.html">geo::Shape</a></td></tr>'
        + _doxygen_row("a2", "void", "translate", "Moves the shape by the given offset.", group)
        + _doxygen_row("a3", "void", "scale", "Scales the shape around its centre.", group)
    )
    entry = (
        '<h2 class="groupheader">Member Function Documentation</h2><a id="a1"></a><h2 class="memtitle">radius()</h2>'
        '<div class="memitem"><div class="memproto">double radius()</div><div class="memdoc"><p>The circle\'s radius.'
        " It is never negative.</p></div></div>"
    )
    html = (
        '<html><head><meta name="generator" content="Doxygen 1.9.4"/><title>geo::Circle</title></head><body>'
        f'<div class="contents"><h1>geo::Circle Class Reference</h1><table class="memberdecls">{rows}</table>'
        f"{entry}</div></body></html>"
    )
    text = extract(html).text
    assert "Public Member Functions inherited from geo::Shape: translate, scale." in text
    assert "Moves the shape" not in text and "Scales the shape" not in text
    # the class's own members' summary names them; their briefs are read once, in their entries below
    assert "Documented below: radius." in text and text.count("The circle's radius.") == 1
    elsewhere = html.replace('<a id="a1"></a>', "")  # members whose entries are on other pages
    assert "Documented on their pages: radius." in extract(elsewhere).text
    # a page of another generator with the same classes is read as written
    assert "Moves the shape" in extract(html.replace("Doxygen 1.9.4", "Sphinx 7")).text


def test_doxygens_title_heads_the_page_and_its_banner_is_left_out():
    """Doxygen writes the page's title as a <div class="title">, no heading element: each member's entry stood
    under no class, and a page whose HTML header writes no <title> (JsonCpp's) was titled by its file name."""
    from kbflow.sources.web.apidocs.doxygen import BANNER

    body = (
        '<body><div id="top"><div id="titlearea"><span id="projectname">JsonCpp</span> '
        '<span id="projectnumber">1.9.5</span></div></div>'
        '<div class="header"><div class="summary"><a href="#pub-methods">Public Member Functions</a></div>'
        '<div class="headertitle"><div class="title">Json::Reader Class Reference<span class="mlabels">'
        '<span class="mlabel">final</span></span></div></div></div><div class="contents">'
        '<p>Unserialize a JSON document into a Value.</p><h2 class="memtitle">parse()</h2>'
        "<p>Read a Value from a JSON document.</p></div></body>"
    )
    page = extract(f'<html><head><meta name="generator" content="Doxygen 1.9.1"/></head>{body}</html>')
    assert page.title == "Json::Reader Class Reference"
    assert page.text.startswith("# Json::Reader Class Reference\n\nUnserialize a JSON document")
    assert "## parse()" in page.text and "1.9.5" not in page.text
    assert BANNER in {d["reason"] for d in json.loads(page.layout())["dropped"]}
    titled = extract(
        f'<html><head><meta name="generator" content="Doxygen 1.9.1"/><title>JsonCpp: Reader</title></head>{body}'
        "</html>"
    )
    assert titled.title == "JsonCpp: Reader"  # a <title> the project writes stays its title
    assert "# Json::Reader" not in extract(f"<html><head></head>{body}</html>").text  # another generator's divs


def test_a_doxygen_signature_is_one_line_and_its_cross_references_are_left_out_with_their_reason():
    """Doxygen lays a signature out as a table (one row per parameter) and closes an entry with the members it
    calls and that call it: the signature reads as one line, the cross-references are listed as dropped."""
    proto = (
        '<div class="memproto"><table class="mlabels"><tr><td class="mlabels-left"><table class="memname">'
        '<tr><td class="memname">void geo::Shape::moveTo </td><td>(</td><td class="paramtype">double&#160;</td>'
        '<td class="paramname"><em>x</em>, </td></tr><tr><td class="paramkey"></td><td></td>'
        '<td class="paramtype">double&#160;</td><td class="paramname"><em>y</em>&#160;</td></tr>'
        "<tr><td></td><td>)</td><td></td><td></td></tr></table></td>"
        '<td class="mlabels-right"><span class="mlabels"><span class="mlabel">virtual</span></span></td></tr>'
        "</table></div>"
    )
    doc = (
        '<div class="memdoc"><p>Moves the shape so its centre is at the given point.</p>'
        '<p class="definition">Definition at line <a href="shape_8h_source.html#l00042">42</a> of file shape.h.</p>'
        '<p class="reference">References <a class="el" href="classgeo_1_1Shape.html#a9">geo::Shape::area()</a>.</p>'
        '<p class="referencedby">Referenced by <a class="el" href="classgeo_1_1Circle.html#a3">geo::Circle::grow()'
        "</a>.</p></div>"
    )
    html = (
        '<html><head><meta name="generator" content="Doxygen 1.9.4"/><title>geo::Shape</title></head><body>'
        '<div class="contents"><h2 class="groupheader">Member Function Documentation</h2>'
        f'<h2 class="memtitle">moveTo()</h2><div class="memitem">{proto}{doc}</div></div></body></html>'
    )
    page = extract(html)
    assert "void geo::Shape::moveTo(double x, double y) [virtual]\n\nMoves the shape" in page.text
    for words in ("Definition at line", "References", "Referenced by", "geo::Circle::grow"):
        assert words not in page.text
    assert [d["reason"] for d in page.dropped].count(CROSS_REFERENCES) == 3
    # a page of another generator with the same classes is read as written
    other = extract(html.replace("Doxygen 1.9.4", "Sphinx 7")).text
    assert "Referenced by geo::Circle::grow()" in other and " | ( | " in other


def _javadoc17_summary(rows: list[tuple[str, str, str]]) -> str:
    cells = "".join(
        f'<div class="col-first even-row-color"><code>{kind}</code></div>'
        f'<div class="col-second even-row-color"><code><a href="{href}" class="member-name-link">{name}</a>'
        f"(int[]&nbsp;array)</code></div>"
        f'<div class="col-last even-row-color"><div class="block">Finds the {name} of a value.</div></div>'
        for kind, name, href in rows
    )
    return (
        '<section class="method-summary" id="method-summary"><h2>Method Summary</h2>'
        '<div class="summary-table three-column-summary"><div class="table-header col-first">Modifier and Type</div>'
        '<div class="table-header col-second">Method</div><div class="table-header col-last">Description</div>'
        f"{cells}</div></section>"
    )


def test_a_javadoc_class_pages_title_in_its_header_is_read():
    """JDK 9 to 15 title a class page in a <div class="header"> by an <h2>: a reading dropped it as the page's
    banner, and the class's members stood under no class."""
    html = (
        "<html><head><!-- Generated by javadoc --><title>CaseInsensitiveMap (Commons Collections)</title></head>"
        '<body><nav role="navigation"><div class="topNav"><a href="overview-summary.html">Overview</a></div></nav>'
        '<main role="main"><div class="header">'
        '<div class="subTitle">Package org.apache.commons.collections4.map</div>'
        '<h2 title="Class CaseInsensitiveMap" class="title">Class CaseInsensitiveMap</h2></div>'
        '<div class="contentContainer"><div class="description"><div class="block">A case-insensitive Map.</div>'
        '</div><div class="details"><h3>Method Detail</h3><h4>clone</h4><div class="block">Clones the map.</div>'
        + "".join(
            f'<h4>m{i}</h4><div class="block">Does the {i}th thing to the map, as it says.</div>' for i in range(40)
        )
        + "</div></div></main></body></html>"
    )
    text = extract(html).text
    assert text.startswith("## Class CaseInsensitiveMap\n\nPackage org.apache.commons.collections4.map\n\n")
    assert "A case-insensitive Map." in text and "Overview" not in text


def test_javadocs_summary_tables_are_one_line_naming_their_members():
    summary = _javadoc17_summary(
        [
            ("static int", "indexOf", "#indexOf(int[])"),
            ("static int", "indexOf", "#indexOf(int[],int)"),
            ("static int", "lastIndexOf", "#lastIndexOf(int[])"),
        ]
    )
    html = (
        '<!DOCTYPE html><html><head><meta name="generator" content="javadoc/ClassWriterImpl"><title>ArrayUtils</title>'
        f"</head><body><main><h1>Class ArrayUtils</h1>{summary}"
        '<section class="method-details"><h2>Method Details</h2><section class="detail" id="indexOf(int[])">'
        '<h3>indexOf</h3><div class="block">Finds the index of the given value in the array.</div></section>'
        "</section></main></body></html>"
    )
    text = extract(html).text
    assert "Documented below: indexOf, lastIndexOf." in text  # each name once, the column headers not names
    assert "Finds the indexOf of a value" not in text and "Modifier and Type" not in text
    assert "Finds the index of the given value in the array." in text  # the member's own entry stays
    assert "Finds the indexOf of a value" in extract(html.replace("javadoc/ClassWriterImpl", "Sphinx")).text


def test_javadoc_8s_package_summary_names_its_classes_documented_elsewhere():
    table = (
        '<table class="typeSummary" summary="Class Summary table"><caption><span>Class Summary</span></caption>'
        '<tr><th class="colFirst" scope="col">Class</th><th class="colLast" scope="col">Description</th></tr>'
        '<tr class="altColor"><td class="colFirst"><a href="ArrayUtils.html" title="class in lang3">ArrayUtils</a></td>'
        '<td class="colLast"><div class="block">Operations on arrays.</div></td></tr>'
        '<tr class="rowColor"><td class="colFirst"><a href="CharUtils.html" title="class in lang3">CharUtils</a></td>'
        '<td class="colLast"><div class="block">Operations on char primitives.</div></td></tr></table>'
    )
    html = (
        '<html><head><meta name="generator" content="javadoc (1.8.0_292)"><title>lang3</title></head>'
        f'<body><div class="contentContainer"><h1>Package lang3</h1>{table}</div></body></html>'
    )
    root = parse(html)[0]
    assert read_api_page(root, "javadoc") == 1
    text = extract(html).text
    assert "Documented on their pages: ArrayUtils, CharUtils." in text
    assert "Operations on arrays." not in text


def test_javadoc_8s_member_summary_takes_the_names_from_their_links_not_the_type_column():
    table = (
        '<table class="memberSummary"><tr><th class="colFirst" scope="col">Modifier and Type</th>'
        '<th class="colLast" scope="col">Method and Description</th></tr>'
        '<tr class="altColor"><td class="colFirst"><code>static int</code></td><td class="colLast"><code>'
        '<span class="memberNameLink"><a href="#indexOf-int:A-int-">indexOf</a></span>(int[] array, int v)</code>'
        '<div class="block">Finds the index of the given value.</div></td></tr></table>'
    )
    html = (
        '<html><head><meta name="generator" content="javadoc (1.8.0_292)"><title>ArrayUtils</title></head>'
        f'<body><div class="contentContainer"><h1>Class ArrayUtils</h1>{table}</div></body></html>'
    )
    assert "Documented below: indexOf." in extract(html).text


def test_a_rustdoc_modules_item_list_names_its_items_documented_on_their_pages():
    items = (
        '<h2 id="structs" class="section-header">Structs</h2><dl class="item-table">'
        '<dt><a class="struct" href="struct.Difference.html">Difference</a></dt>'
        "<dd>A lazy iterator producing elements in the difference of sets.</dd>"
        '<dt><a class="struct" href="struct.IndexSet.html">Index<wbr>Set</a></dt>'
        '<dd>A hash set; see <a href="../map/struct.IndexMap.html"><code>IndexMap</code></a>.</dd></dl>'
    )
    html = (
        '<!DOCTYPE html><html><head><meta name="generator" content="rustdoc"><title>indexmap::set - Rust</title>'
        f'</head><body><main><section id="main-content"><h1>Module set</h1>{items}</section></main></body></html>'
    )
    text = extract(html).text
    assert "Documented on their pages: Difference, IndexSet." in text  # the link inside a summary is no item
    assert "A lazy iterator producing" not in text
    assert "A lazy iterator producing" in extract(html.replace('content="rustdoc"', 'content="Sphinx"')).text


def test_a_rustdoc_traits_long_declaration_names_its_members_documented_below():
    """rustdoc writes every method's signature in the trait's declaration, folded in a closed details ("Show 3
    methods"), then each method's entry: the list is one line naming them, the entries stay."""

    def sig(name: str) -> str:
        return (
            f'    fn <a href="#method.{name}" class="fn">{name}</a>&lt;J&gt;(self) -&gt; '
            '<a class="struct" href="struct.Zip.html">Zip</a>&lt;Self&gt; <a href="#" class="tooltip">ⓘ</a> { ... }\n'
        )

    decl = (
        '<pre class="rust item-decl"><code>pub trait Itertools: Iterator {\n'
        '<details class="toggle type-contents-toggle"><summary class="hideme"><span>Show 3 methods</span></summary>'
        f"    // Provided methods\n{sig('interleave')}{sig('zip_longest')}{sig('interleave')}</details>}}</code></pre>"
    )
    entry = (
        '<details class="toggle method-toggle" open><summary><section id="method.zip_longest" class="method">'
        '<h4 class="code-header">fn zip_longest&lt;J&gt;(self)</h4></section></summary>'
        "<div class='docblock'>Zip to the end of the longer one.</div></details>"
    )
    html = (
        '<!DOCTYPE html><html><head><meta name="generator" content="rustdoc"><title>Itertools</title></head><body>'
        f'<main><section id="main-content"><h1>Trait Itertools</h1>{decl}{entry}</section></main></body></html>'
    )
    text = extract(html).text
    assert "Documented below: interleave, zip_longest." in text
    assert "Show 3 methods" not in text and "Zip<Self>" not in text and "ⓘ" not in text
    assert "Zip to the end of the longer one." in text and "pub trait Itertools: Iterator {" in text


def test_a_sphinx_autosummary_table_names_the_members_it_links_to():
    def row(name: str, href: str, summary: str) -> str:
        return (
            f'<tr class="row-odd"><td><p><a class="reference internal" href="{href}" title="pkg.{name}">'
            f'<code class="xref py py-obj docutils literal notranslate"><span class="pre">{name}</span></code></a>'
            f"(x)</p></td><td><p>{summary}</p></td></tr>"
        )

    table = (
        '<table class="autosummary longtable docutils align-default"><tbody>'
        + row("dumps", "#pkg.dumps", "Serialize an object to a string.")
        + row("loads", "#pkg.loads", "Read an object back.")
        + "</tbody></table>"
    )
    html = (
        '<html><head><meta name="generator" content="Docutils 0.19: https://docutils.sourceforge.io/"/>'
        f'<title>pkg</title></head><body><main><h1>pkg</h1>{table}<dl class="py function"><dt id="pkg.dumps">'
        '<span class="sig-name descname">dumps</span>(x)</dt><dd><p>Serialize an object to a string, in full.</p>'
        "</dd></dl></main></body></html>"
    )
    text = extract(html).text
    assert "Documented below: dumps, loads." in text
    assert "Read an object back." not in text and "Serialize an object to a string, in full." in text


def test_a_javadoc_before_jdk_16_names_itself_in_a_comment_and_its_copies_are_pointers_too():
    """JDK 8-15 write no <meta name="generator">, only "<!-- Generated by javadoc -->" in the head."""
    jdk11 = JAVADOC.replace(
        '<meta name="generator" content="javadoc/ClassWriterImpl">', "<!-- Generated by javadoc -->"
    ).replace("descfrm-type-label", "descfrmTypeLabel")
    text = extract(jdk11).text
    assert "Documented on ThreadPredicate." in text and "Evaluates this predicate" not in text
    # the comment elsewhere than in the head, or another tool's comment, names no generator
    other = jdk11.replace("<!-- Generated by javadoc -->", "<!-- Generated by hand -->")
    assert "Evaluates this predicate" in extract(other).text


def _pdoc_member(anchor: str, kind: str, keyword: str, name: str, params: str, doc: str) -> str:
    return (
        f'<input id="{anchor}-view-source" class="view-source-toggle-state" type="checkbox">'
        f'<div class="attr {kind}"><span class="def">{keyword}</span> <span class="name">{name}</span>'
        f'<span class="signature pdoc-code multiline">({params}):</span>'
        f'<label class="view-source-button" for="{anchor}-view-source"><span>View Source</span></label></div>'
        f'<a class="headerlink" href="#{anchor}"></a><div class="pdoc-code codehilite"><pre>{keyword} {name}(): ...'
        f'</pre></div><div class="docstring"><p>{doc}</p></div>'
    )


def test_pdocs_signatures_head_their_entries_and_inherited_members_are_one_line_per_base():
    """pdoc writes no heading element for a member: its signature heads its entry, a class's members one level
    below the class; "View Source" is a marker, the source it shows is hidden; inherited members are one line."""
    style = (
        "<style>.view-source-toggle-state,.view-source-toggle-state ~ .pdoc-code{display:none;}"
        ".view-source-toggle-state:checked ~ .pdoc-code{display:block;}</style>"
    )
    params = '<span class="param">\t<span class="n">self</span>,</span><span class="param">\t<span>cmd</span></span>'
    add = _pdoc_member("Group.add_command", "function", "def", "add_command", params, "Registers another command.")
    group = _pdoc_member("Group", "class", "class", "Group", "Command", "A group nests other commands.")
    echo = _pdoc_member("echo", "function", "def", "echo", '<span class="param">message</span>', "Prints a line.")
    inherited = (
        '<div class="inherited"><h5>Inherited Members</h5><dl><div><dt><a href="#Command">Command</a></dt>'
        '<dd id="Group.name" class="variable"><a href="#Command.name">name</a></dd>'
        '<dd id="Group.invoke" class="function"><a href="#Command.invoke">invoke</a></dd></div></dl></div>'
    )
    html = (
        f'<html><head><meta name="generator" content="pdoc 16.0.0"/><title>click.core API documentation</title>'
        f'{style}</head><body><main class="pdoc"><section class="module-info"><h1 class="modulename">click.core</h1>'
        f'<div class="docstring"><p>The core of click.</p></div></section><section id="echo">{echo}</section>'
        f'<section id="Group">{group}<div id="Group.add_command" class="classattr">{add}</div>{inherited}</section>'
        "</main></body></html>"
    )
    text = extract(html).text
    assert "## def echo(message):\n\nPrints a line." in text
    assert "## class Group(Command):\n\nA group nests other commands." in text
    assert "### def add_command(self, cmd):\n\nRegisters another command." in text  # a class's member, one below
    assert "### Inherited Members\n\nInherited from Command: name, invoke." in text
    assert "View Source" not in text and "add_command(): ..." not in text
    # a page no pdoc wrote keeps its divs as paragraphs
    assert "## def echo" not in extract(html.replace("pdoc 16.0.0", "Hugo 0.1")).text


def test_pdoc3s_entries_are_headings_its_source_blocks_left_out_and_inherited_members_one_line():
    """pdoc3 writes each entry as a ``<dt id>`` signature, a class's members in its ``<dd>`` under "Methods",
    the source in a closed ``<details>``, inherited members as nested lists."""
    method = (
        '<dt id="click.core.Group.add_command"><code class="name flex"><span>def <span class="ident">add_command'
        '</span></span>(<span>self,<br>cmd)</span></code></dt><dd><details class="source"><summary><span>Expand '
        'source code</span></summary><pre><code class="python">def add_command(self, cmd): ...</code></pre>'
        '</details><div class="desc"><p>Registers another command.</p></div></dd>'
    )
    inherited = (
        '<h3>Inherited members</h3><ul class="hlist"><li><code><b><a href="#click.core.Command">Command</a></b></code>:'
        '<ul class="hlist"><li><code><a href="#click.core.Command.name">name</a></code></li>'
        '<li><code><a href="#click.core.Command.invoke">invoke</a></code></li></ul></li></ul>'
    )
    group = (
        '<dt id="click.core.Group"><code class="flex name class"><span>class <span class="ident">Group</span></span>'
        '<span>(</span><span>name=None)</span></code></dt><dd><div class="desc"><p>Nests commands.</p></div>'
        f"<h3>Methods</h3><dl>{method}</dl>{inherited}</dd>"
    )
    html = (
        '<html><head><meta name="generator" content="pdoc3 0.11.6"><title>click.core API documentation</title>'
        '</head><body><main><article id="content"><header><h1 class="title">Module <code>click.core</code></h1>'
        f'</header><section><h2 class="section-title" id="header-classes">Classes</h2><dl>{group}</dl></section>'
        "</article></main></body></html>"
    )
    page = extract(html)
    assert "### class Group(name=None)\n\nNests commands.\n\n#### Methods" in page.text
    assert "##### def add_command(self, cmd)\n\nRegisters another command." in page.text
    assert "#### Inherited members\n\nInherited from Command: name, invoke." in page.text
    assert "Expand source code" not in page.text and "def add_command(self, cmd): ..." not in page.text
    assert [d["reason"] for d in page.dropped].count(SOURCE_CODE) == 1


def test_a_members_source_folded_in_a_closed_details_is_left_out_whatever_the_generator():
    """mkdocstrings folds each member's source into ``<details class="mkdocstrings-source">``: a reader sees it
    on demand only, so it is left out; an open one, or a closed one holding no code, is read."""
    source = (
        '<details class="mkdocstrings-source"><summary>Source code in <code>click/core.py</code></summary>'
        '<div class="highlight"><pre><code>def add_command(self, cmd):\n    self.commands[cmd.name] = cmd</code></pre>'
        "</div></details>"
    )
    html = (
        '<html><head><meta name="generator" content="mkdocs-1.6.1, mkdocs-material-9.8.2"></head><body><article>'
        '<h1>Core</h1><div class="doc doc-object doc-function"><h3 id="click.core.Group.add_command">'
        "<code>add_command(cmd)</code></h3><p>Registers another command.</p>"
        f"{source}</div><details><summary>Source</summary><p>Adapted from the click tutorial.</p></details>"
        "</article></body></html>"
    )
    page = extract(html)
    assert "### add_command(cmd)\n\nRegisters another command." in page.text
    assert "self.commands[cmd.name]" not in page.text and "Source code in" not in page.text
    assert [d["reason"] for d in page.dropped].count(SOURCE_CODE) == 1
    assert "Adapted from the click tutorial." in page.text  # a note titled "Source" holds no code: read
    opened = extract(html.replace('<details class="mkdocstrings-source">', '<details open class="x">')).text
    assert "self.commands[cmd.name] = cmd" in opened


def _sphinx_member(owner: str, name: str, doc: str, source: str | None, kind: str = "method") -> str:
    link = (
        f'<a class="reference internal" href="_modules/pkg/base.html#{source}"><span class="viewcode-link">'
        '<span class="pre">[source]</span></span></a>'
        if source
        else ""
    )
    return (
        f'<dl class="py {kind}"><dt class="sig sig-object py" id="pkg.{owner}.{name}"><span class="sig-name descname">'
        f'<span class="pre">{name}</span></span><span class="sig-paren">(</span>other<span class="sig-paren">)</span>'
        f"{link}</dt><dd><p>{doc}</p></dd></dl>"
    )


def test_sphinx_members_inherited_from_a_documented_base_or_from_python_are_one_line_per_origin():
    """autodoc's ``:inherited-members:`` documents each inherited member again and marks none: viewcode links only
    a class's own members, so a member without its link that a base defines is the base's; one whose docs are
    Python's own is Python's. The class's own members stay whole."""
    put = "Insert the pair, failing on a duplicate."
    base = (
        '<dl class="py class"><dt class="sig sig-object py" id="pkg.Base"><span class="sig-name descname">Base</span>'
        f"</dt><dd><p>A base.</p>{_sphinx_member('Base', 'put', put, 'Base.put')}"
        f"{_sphinx_member('Base', 'size', 'Counts the pairs.', 'Base.size')}</dd></dl>"
    )
    child = (
        '<dl class="py class"><dt class="sig sig-object py" id="pkg.Child"><span class="sig-name descname">Child'
        '</span></dt><dd><p>Bases: <code class="xref py py-class"><span class="pre">pkg.Base</span></code></p>'
        f"<p>A child.</p>{_sphinx_member('Child', '__eq__', 'Return self==value.', None)}"
        f"{_sphinx_member('Child', '__weakref__', 'list of weak references to the object (if defined)', None)}"
        f"{_sphinx_member('Child', 'extra', 'Does the child&#39;s own thing.', 'Child.extra')}"
        f"{_sphinx_member('Child', 'put', put, None)}"
        f"{_sphinx_member('Child', 'size', 'The child&#39;s size, a property.', None, 'property')}</dd></dl>"
    )
    html = f"<html><head><title>API</title></head><body><article><h1>API</h1>{base}{child}</article></body></html>"
    text = extract(html).text
    assert text.count(put) == 1  # read where Base defines it
    # __weakref__, every Python class's, as Python before 3.11 wrote its docstring
    assert "Inherited from Python's built-in types: __eq__, __weakref__." in text and "Return self==value." not in text
    assert "weak references" not in text
    assert "Inherited from Base: put." in text
    assert "Does the child's own thing." in text
    assert "The child's size, a property." in text  # a property has no source link: its absence says nothing
    # without viewcode's links a page does not say which members a class defines: only Python's own are folded
    # the pointer lines close the class under a heading of their own, not inside the entry they followed
    own, _, rest = text.partition("Other members of Child")
    assert "Inherited from Base: put." in rest and "Inherited from Base" not in own
    assert "Does the child's own thing." in own
    plain = re.sub(r'<a class="reference internal" href="_modules[^"]*">.*?</a>', "", html)
    text = extract(plain).text
    assert text.count(put) == 2 and "Inherited from Python's built-in types: __eq__, __weakref__." in text


def test_sphinx_members_without_documentation_are_one_line_and_leave_their_neighbours_entries_alone():
    """``:undoc-members:`` and ``:special-members:`` give entries of a signature alone (``__slots__ = ()``,
    ``__dict__ = mappingproxy(...)``): as headings with nothing below them they joined the entry above, so a
    documented member's chunk read as its neighbours' reprs. They are named on one line under the class's
    "Other members" heading."""
    empty = (
        '<dl class="py attribute"><dt class="sig sig-object py" id="pkg.Child.__slots__"><span class="sig-name '
        'descname"><span class="pre">__slots__</span></span><em class="property"> = ()</em></dt><dd></dd></dl>'
    )
    child = (
        '<dl class="py class"><dt class="sig sig-object py" id="pkg.Child"><span class="sig-name descname">Child'
        f"</span></dt><dd><p>A child.</p>{empty}"
        f"{_sphinx_member('Child', 'extra', 'Does the child&#39;s own thing.', 'Child.extra')}"
        f"{empty.replace('__slots__', '__module__')}</dd></dl>"
    )
    html = f"<html><head><title>API</title></head><body><article><h1>API</h1>{child}</article></body></html>"
    text = extract(html).text
    assert "= ()" not in text and "#### __slots__" not in text
    own, _, rest = text.partition("Other members of Child")
    assert "Does the child's own thing." in own and "__module__" not in own
    assert "Without documentation: __slots__, __module__." in rest
    page = extract(html)
    line = next(b for b in page.blocks if page.text[b[0] : b[1]].startswith("Without documentation"))
    assert line[2].endswith("> dl > dd")  # the class's body, which holds the members it names
