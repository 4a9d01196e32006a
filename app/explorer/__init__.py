"""The group explorer's parts (the page is :mod:`app.views.explorer`): its picks in one state
object (:mod:`~app.explorer.state`) and what clicks do to them (:mod:`~app.explorer.clicks`),
what it computes once per graph (:mod:`~app.explorer.compute`), the headline
(:mod:`~app.explorer.header`), the graph and its pickers (:mod:`~app.explorer.graph_area`), the
critical transitions and alarms beside it (:mod:`~app.explorer.beside`), the tabs below it
(:mod:`~app.explorer.tabs`, :mod:`~app.explorer.node_tab`) and the marks of assumed values
(:mod:`~app.explorer.marks`)."""
