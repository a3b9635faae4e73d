import threading

import pytest

from memlab.base import Component, ConfigError, MemlabError, did_you_mean
from memlab.registry import Registry


class Leaf(Component):
    def __init__(self, alpha: float = 1.0, name: str = "leaf"):
        self.alpha = alpha
        self.name = name
        self.changes = 0
        self._on_params_changed()

    def _on_params_changed(self):
        if self.alpha < 0:
            raise ConfigError(f"alpha must be >= 0, got {self.alpha}")
        self.changes += 1
        self._derived = self.alpha * 2


class Tree(Component):
    def __init__(self, leaf: Leaf | None = None, leaves: list | None = None, k: int = 3, lock=None):
        self.leaf = leaf
        self.leaves = leaves
        self.k = k
        self.lock = lock


def test_errors_are_value_errors():
    assert issubclass(MemlabError, ValueError) and issubclass(ConfigError, MemlabError)


def test_did_you_mean_messages():
    assert did_you_mean("hybird", ["hybrid", "bm25"], "strategy") == \
        "unknown strategy 'hybird'. Did you mean 'hybrid'? Available: bm25, hybrid"
    assert did_you_mean("zzz", ["b", "a"], "thing") == "unknown thing 'zzz'. Available: a, b"
    assert did_you_mean("x", [], "thing") == "unknown thing 'x'. Available: (none)"


def test_get_params_shallow_and_deep_with_nesting_and_lists():
    tree = Tree(leaf=Leaf(0.5), leaves=[Leaf(2.0, "a"), "not a component"], k=7)
    assert tree.get_params(deep=False) == {"leaf": tree.leaf, "leaves": tree.leaves, "k": 7, "lock": None}
    deep = tree.get_params()
    assert deep["leaf__alpha"] == 0.5 and deep["leaf__name"] == "leaf"
    assert deep["leaves__0__alpha"] == 2.0 and deep["leaves__0__name"] == "a"
    assert not any(key.startswith("leaves__1") for key in deep)
    assert sorted(deep) == sorted(["leaf", "leaves", "k", "lock", "leaf__alpha", "leaf__name",
                                   "leaves__0__alpha", "leaves__0__name"])


def test_set_params_nested_and_hook():
    tree = Tree(leaf=Leaf(), leaves=[Leaf(), Leaf()])
    assert tree.set_params(k=9, leaf__alpha=4.0, leaves__1__name="second") is tree
    assert tree.k == 9 and tree.leaf.alpha == 4.0 and tree.leaf._derived == 8.0
    assert tree.leaf.changes == 2  # constructor + set_params
    assert tree.leaves[1].name == "second" and tree.leaves[0].name == "leaf"


def test_set_params_errors():
    tree = Tree(leaf=Leaf(), leaves=[Leaf()])
    with pytest.raises(ConfigError, match=r"unknown parameter of Tree 'kk'\. Did you mean 'k'\? Available: k, leaf, "
                                          r"leaves, lock"):
        tree.set_params(kk=1)
    with pytest.raises(ConfigError, match=r"unknown parameter of Leaf 'alpah'\. Did you mean 'alpha'\?"):
        tree.set_params(leaf__alpah=1)
    with pytest.raises(ConfigError, match=r"leaves__5__alpha: expected leaves__<index>__<param> with index < 1"):
        tree.set_params(leaves__5__alpha=1.0)
    with pytest.raises(ConfigError, match=r"leaves__x__alpha: expected"):
        tree.set_params(leaves__x__alpha=1.0)
    with pytest.raises(ConfigError, match=r"parameter 'k' of Tree is int, not a component; cannot set \['x'\]"):
        tree.set_params(k__x=1)
    with pytest.raises(ConfigError, match=r"alpha must be >= 0, got -1"):
        tree.set_params(leaf__alpha=-1)


def test_clone_is_fresh_and_deep():
    lock = threading.Lock()
    tree = Tree(leaf=Leaf(3.0), leaves=[Leaf(1.5)], k=2, lock=lock)
    tree.leaf.changes = 99  # state, not configuration
    copy = tree.clone()
    assert copy is not tree and copy.leaf is not tree.leaf and copy.leaves[0] is not tree.leaves[0]
    assert copy.get_params(deep=True).keys() == tree.get_params(deep=True).keys()
    assert copy.leaf.alpha == 3.0 and copy.leaves[0].alpha == 1.5 and copy.k == 2
    assert copy.leaf.changes == 1
    assert copy.lock is lock  # a lock cannot be deep-copied, so it is shared


def test_clone_copies_plain_containers():
    class Holder(Component):
        def __init__(self, options: dict | None = None):
            self.options = options

    h = Holder({"a": [1, 2]})
    c = h.clone()
    assert c.options == {"a": [1, 2]} and c.options is not h.options and c.options["a"] is not h.options["a"]


def test_repr_shows_only_non_defaults():
    assert repr(Leaf()) == "Leaf()"
    assert repr(Leaf(2.0, "x")) == "Leaf(alpha=2.0, name='x')"
    assert repr(Tree(leaf=Leaf(0.5), k=3)) == "Tree(leaf=Leaf(alpha=0.5))"


def test_varargs_are_rejected():
    class Bad(Component):
        def __init__(self, *args):
            self.args = args

    with pytest.raises(TypeError, match=r"Bad.__init__ must not take \*args or \*\*kwargs"):
        Bad().get_params()


def test_component_without_init_has_no_params():
    class Empty(Component):
        pass

    assert Empty().get_params() == {} and repr(Empty()) == "Empty()"
    assert isinstance(Empty().clone(), Empty)


def test_registry():
    reg: Registry[Leaf] = Registry("leaf kind")

    @reg.register("plain")
    def plain(**params):
        return Leaf(**params)

    reg.register("named", lambda alpha=1.0: Leaf(alpha, "named"))
    assert reg.names() == ["named", "plain"] and list(reg) == ["named", "plain"]
    assert "plain" in reg and "other" not in reg
    built = reg.get("plain", alpha=0.25)
    assert isinstance(built, Leaf) and built.alpha == 0.25
    assert reg.get("named").name == "named"
    assert reg.factory("plain") is plain
    reg.register("plain", plain)  # same factory again is fine
    with pytest.raises(ConfigError, match=r"leaf kind 'plain' is already registered"):
        reg.register("plain", lambda: Leaf())
    reg.register("plain", lambda: Leaf(9.0), overwrite=True)
    assert reg.get("plain").alpha == 9.0
    with pytest.raises(ConfigError, match=r"unknown leaf kind 'plian'\. Did you mean 'plain'\? Available: named, "
                                          r"plain"):
        reg.get("plian")


def test_registry_tags_are_declared_checked_listed_and_restored():
    reg: Registry[Leaf] = Registry("leaf kind", tags={"builtin": "ours", "fast": "quick"})
    reg.register("a", Leaf, tags=("builtin", "fast"))
    reg.register("b", Leaf)
    reg.register_lazy("c", "memlab.base:Component", tags=["builtin"])
    assert reg.names(tag="builtin") == ["a", "c"] and reg.names(tag="fast") == ["a"] and reg.names() == ["a", "b", "c"]
    assert reg.tags("a") == ["builtin", "fast"] and reg.tags("b") == []
    reg.factory("c")  # a lazy entry keeps its tags once imported
    assert reg.tags("c") == ["builtin"]
    with pytest.raises(ConfigError, match=r"leaf kind 'd': unknown tag 'biultin'; tags: builtin, fast"):
        reg.register("d", Leaf, tags=["biultin"])
    assert "d" not in reg
    with pytest.raises(ConfigError, match=r"tags must be a list of tags, got the string 'builtin'"):
        reg.register("d", Leaf, tags="builtin")
    with pytest.raises(ConfigError, match=r"unknown leaf kind tag 'fsat'. Did you mean 'fast'"):
        reg.names(tag="fsat")
    with pytest.raises(ConfigError, match=r"unknown leaf kind 'zz'"):
        reg.tags("zz")
    snap = reg.snapshot()
    reg.register("e", Leaf, tags=["fast"])
    reg.restore(snap)
    assert reg.names(tag="fast") == ["a"]
    untagged: Registry[Leaf] = Registry("plain")
    with pytest.raises(ConfigError, match=r"tags: none \(this registry has no tags\)"):
        untagged.register("a", Leaf, tags=["x"])


def test_failed_set_params_changes_nothing():
    tree = Tree(leaf=Leaf(2.0), leaves=[Leaf(1.0)], k=3)
    with pytest.raises(ConfigError, match=r"alpha must be >= 0, got -1"):
        tree.set_params(k=5, leaves__0__alpha=4.0, leaf__alpha=-1)
    assert tree.k == 3 and tree.leaf.alpha == 2.0 and tree.leaf._derived == 4.0
    assert tree.leaves[0].alpha == 1.0 and tree.leaves[0]._derived == 2.0
    leaf = Leaf(3.0)
    with pytest.raises(ConfigError):
        leaf.set_params(alpha=-1)
    assert leaf.alpha == 3.0 and leaf._derived == 6.0


def test_abstract_methods_are_enforced():
    from abc import abstractmethod

    class Base(Component):
        @abstractmethod
        def run(self): ...

    class Missing(Base):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Missing()


def test_declared_constraints_are_checked_before_a_value_is_stored():
    from memlab.base import Param

    class Knob(Component):
        constraints = {"n": Param(int, ge=1), "rate": Param(float, gt=0, le=1),
                       "mode": Param(choices=("raise", "skip")), "label": Param(str, none=True)}

        def __init__(self, n: int = 1, rate: float = 0.5, mode: str = "raise", label: str | None = None):
            self.n, self.rate, self.mode, self.label = n, rate, mode, label

    with pytest.raises(ConfigError, match=r"^Knob parameter 'n': expected an int >= 1, got 0$"):
        Knob(n=0)
    with pytest.raises(ConfigError, match=r"^Knob parameter 'n': expected an int >= 1, got True$"):
        Knob(n=True)
    with pytest.raises(ConfigError, match=r"^Knob parameter 'rate': expected a number > 0 and <= 1, got 1.5$"):
        Knob(rate=1.5)
    with pytest.raises(ConfigError, match=r"^Knob parameter 'mode': expected one of 'raise', 'skip', got 'ignore'$"):
        Knob(mode="ignore")
    knob = Knob(rate=1, label=None)
    assert knob.label is None and knob.rate == 1  # None and ints stored as given
    with pytest.raises(ConfigError, match="expected a string or None, got 3"):
        knob.set_params(n=4, label=3)
    assert (knob.n, knob.label) == (1, None)  # a failed set_params leaves the old values

    class Child(Knob):
        constraints = {"n": Param(int, ge=10)}

    assert Child(n=10).n == 10 and Child(n=10).rate == 0.5
    with pytest.raises(ConfigError, match=r"^Child parameter 'n': expected an int >= 10, got 2$"):
        Child(n=2)


def test_param_items_emptiness_and_predicates():
    from memlab.base import Param

    weights = Param(each=Param(float, finite=True), none=True)
    assert weights.expected == "a list of items each a finite number or None"
    assert weights.accepts([1, 2.5]) and weights.accepts((0,)) and weights.accepts(None)
    assert not weights.accepts([1, float("nan")]) and not weights.accepts("12") and not weights.accepts([True])
    kinds = Param(tuple, nonempty=True, each=Param(choices=("a", "b")))
    assert kinds.expected == "a non-empty tuple of items each one of 'a', 'b'"
    assert kinds.accepts(("a", "b")) and not kinds.accepts(()) and not kinds.accepts(("c",))
    assert not kinds.accepts(["a"])
    name = Param(str, nonempty=True)
    assert name.expected == "a non-empty string" and not name.accepts("") and name.accepts("x")
    slash = Param(str, test=lambda v: v.startswith("/"), expected="a path starting with '/'")
    assert slash.accepts("/a") and not slash.accepts("a") and not slash.accepts(3)
    assert slash.expected == "a path starting with '/'"


def test_a_fusion_without_fuse_cannot_be_built():
    from memlab.retrieval.fusion import Fusion

    class Lazy(Fusion):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Lazy()


def test_clone_of_a_resource_is_scoped():
    from memlab.base import Resource

    class Shelf(Resource, Component):
        def __init__(self, name: str = "main"):
            self.name = name

        def scoped(self, scope):
            return Shelf(name=f"{self.name}/{scope}")

    shelf = Shelf()
    assert [shelf.clone().name, shelf.clone().name, shelf.clone(scope="d1").name] == [
        "main/clone-1", "main/clone-2", "main/d1"]
