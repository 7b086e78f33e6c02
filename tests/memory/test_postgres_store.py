"""PostgresStore specifics on a real PostgreSQL + pgvector: row-level security, the HNSW path, idempotent adds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest

from kiosk.errors import StoreError
from kiosk.memory.pg_schema import FLEET_LATEST_VERSION
from kiosk.memory.postgres_store import PostgresStore

from .builders import count_rows, make_note, unit

pytestmark = pytest.mark.usefixtures("pg_database")


@pytest.fixture()
def urls(pg_database: tuple[str, str]) -> tuple[str, str]:
    return pg_database


def _two_owners(store: PostgresStore) -> tuple[int, int, list[int], list[int]]:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    ann_notes = [store.add_note(make_note(ann, f"ann {i}", seed=i)).id or 0 for i in range(3)]
    bob_notes = [store.add_note(make_note(bob, f"bob {i}", seed=10 + i)).id or 0 for i in range(3)]
    store.add_link(ann_notes[0], ann_notes[1], "related")
    store.add_link(bob_notes[0], bob_notes[1], "related")
    for note_id in (ann_notes[2], bob_notes[2]):
        note = store.get_note(note_id)
        assert note is not None
        note.tags = ["touched"]
        store.update_note(note, reason="touch")
    return ann, bob, ann_notes, bob_notes


def test_raw_sql_as_one_owner_returns_no_row_of_another(urls: tuple[str, str]) -> None:
    _, terminal_url = urls
    with PostgresStore(terminal_url) as store:
        ann, bob, ann_notes, bob_notes = _two_owners(store)
    with psycopg.connect(terminal_url, autocommit=True) as raw:
        role = raw.execute("SELECT rolbypassrls, rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        assert role == (False, False)
        with raw.transaction():
            raw.execute("SELECT set_config('kiosk.owner_ids', %s, true)", (f"{{{ann}}}",))
            # No WHERE clause at all: a query bug that forgets the owner filter still sees only Ann's rows.
            assert {r[0] for r in raw.execute("SELECT owner_id FROM notes").fetchall()} == {ann}
            assert {r[0] for r in raw.execute("SELECT owner_id FROM links").fetchall()} == {ann}
            assert {r[0] for r in raw.execute("SELECT owner_id FROM history").fetchall()} == {ann}
            assert raw.execute("SELECT count(*) FROM notes WHERE id = ANY(%s)", (bob_notes,)).fetchone() == (0,)
            assert raw.execute("SELECT count(*) FROM notes").fetchone() == (len(ann_notes),)
            # Nor can it write into or change another owner's memory.
            changed = raw.execute("UPDATE notes SET content = 'x' WHERE owner_id = %s", (bob,)).rowcount
            assert changed == 0
            assert raw.execute("DELETE FROM links WHERE owner_id = %s", (bob,)).rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"), raw.transaction():
            raw.execute("SELECT set_config('kiosk.owner_ids', %s, true)", (f"{{{ann}}}",))
            raw.execute(
                "INSERT INTO history (note_id, owner_id, at, reason, before, after) "
                "VALUES (%s, %s, 0, 'x', '{}', '{}')",
                (bob_notes[0], bob),
            )
        # Without the setting nothing at all is visible (default deny).
        assert raw.execute("SELECT count(*) FROM notes").fetchone() == (0,)
        # The terminal cannot switch row-level security off or take the table over.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            raw.execute("ALTER TABLE notes DISABLE ROW LEVEL SECURITY")


def test_owner_scope_hides_other_owners_from_id_based_calls(urls: tuple[str, str]) -> None:
    _, terminal_url = urls
    with PostgresStore(terminal_url) as store:
        ann, bob, ann_notes, bob_notes = _two_owners(store)
        with store.owner_scope([ann]):
            assert store.get_note(bob_notes[0]) is None
            assert [n.id for n in store.get_notes(bob_notes + ann_notes)] == ann_notes
            assert store.links(bob_notes[0]) == [] and store.history(bob_notes[2]) == []
            assert store.knn([ann, bob], unit(10), 6) and all(i in ann_notes for i, _ in store.knn([bob], unit(10), 6))
            assert store.owner_matrix([bob])[0].size == 0
            with pytest.raises(StoreError, match="no note"):
                store.delete_note(bob_notes[0])
            assert store.count_notes() == 3
        assert store.get_note(bob_notes[0]) is not None  # administrative calls outside a scope see everyone


def test_large_pools_use_the_hnsw_index_and_stay_owner_restricted(urls: tuple[str, str]) -> None:
    _, terminal_url = urls
    with PostgresStore(terminal_url, exact_pool_max=150) as store:
        owners = [store.add_user(f"user{i}").id for i in range(3)]
        vectors: dict[int, tuple[int, np.ndarray]] = {}
        for i in range(300):
            note = store.add_note(make_note(owners[i % 3], f"n{i}", seed=500 + i))
            assert note.id is not None and note.embedding is not None
            vectors[note.id] = (note.owner_id, note.embedding)
        allowed = owners[:2]
        query = unit(7)
        got = store.knn(allowed, query, 10)
        exact = sorted(
            ((nid, float(v @ query)) for nid, (o, v) in vectors.items() if o in allowed), key=lambda p: -p[1]
        )[:10]
        assert len(got) == 10 and all(vectors[nid][0] in allowed for nid, _ in got)
        recall = len({nid for nid, _ in got} & {nid for nid, _ in exact}) / 10
        assert recall >= 0.8
        assert "notes_embedding_hnsw" in store.explain_knn(allowed, query, 10)
        assert "notes_embedding_hnsw" not in store.explain_knn(owners[:1], query, 10)  # 100 notes: exact scan


def test_an_idempotency_key_stores_a_note_once(urls: tuple[str, str]) -> None:
    _, terminal_url = urls
    with PostgresStore(terminal_url) as store:
        ann = store.add_user("Ann").id
        first = store.add_note(make_note(ann, "once", seed=1), idempotency_key="k-1")
        again = store.add_note(make_note(ann, "once", seed=1), idempotency_key="k-1")
        assert again.id == first.id and store.count_notes(ann) == 1
        store.add_note(make_note(ann, "twice", seed=2))
        store.add_note(make_note(ann, "twice", seed=2))
        assert store.count_notes(ann) == 3  # without a key every call is a new note, as on SQLite


def test_schema_is_created_once_and_terminals_cannot_alter_it(urls: tuple[str, str]) -> None:
    admin_url, terminal_url = urls
    with PostgresStore(admin_url) as admin, PostgresStore(terminal_url) as terminal:
        assert admin.schema_version() == terminal.schema_version() == FLEET_LATEST_VERSION
    with psycopg.connect(terminal_url, autocommit=True) as raw, pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw.execute("UPDATE kiosk_schema SET version = 99")


def test_unreachable_database_is_a_clear_error() -> None:
    from kiosk.memory.postgres_store import StoreUnavailable

    with pytest.raises(StoreUnavailable, match="unreachable"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none")


def test_the_gate_scope_helper_scopes_postgres_and_leaves_sqlite_alone(urls: tuple[str, str], tmp_path: Path) -> None:
    from kiosk.memory import SqliteStore
    from kiosk.memory.store import owner_scope

    _, terminal_url = urls
    with PostgresStore(terminal_url) as store:
        ann, _, _, bob_notes = _two_owners(store)
        with owner_scope(store, [ann]):
            assert store.get_notes(bob_notes) == []
        assert len(store.get_notes(bob_notes)) == 3
    with SqliteStore(tmp_path / "memory.db") as lite:
        bob = lite.add_user("Bob").id
        note = lite.add_note(make_note(bob, "bob"))
        with owner_scope(lite, [bob + 1]):
            assert lite.get_note(note.id or 0) is not None  # SQLite relies on the owner-restricted queries alone


def test_writing_for_an_owner_outside_the_gate_scope_is_a_clear_error(urls: tuple[str, str]) -> None:
    _, terminal_url = urls
    with PostgresStore(terminal_url) as store:
        ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
        with store.owner_scope([ann]), pytest.raises(StoreError, match="refused"):
            store.add_note(make_note(bob, "not Ann's to write"))
        assert store.count_notes(bob) == 0


def test_a_terminal_role_cannot_create_the_schema(pg_cluster: object) -> None:
    import secrets

    from kiosk.memory.pg_local import LocalCluster

    assert isinstance(pg_cluster, LocalCluster)
    name = f"fresh_{secrets.token_hex(4)}"
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        admin.execute(f"CREATE ROLE {name}_t LOGIN PASSWORD 'pw'")
    try:
        with pytest.raises(StoreError, match="may not create or upgrade the fleet schema"):
            PostgresStore(pg_cluster.url(f"{name}_t", "pw", database=name))
    finally:
        with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE {name}_t")


def test_raw_sql_as_a_non_members_gate_scope_returns_no_group_row(urls: tuple[str, str]) -> None:
    from kiosk.identity.gate import GateDecision
    from kiosk.retrieval import scoped_pool

    _, terminal_url = urls
    with PostgresStore(terminal_url) as store:
        ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
        family = store.add_group("family").id
        store.add_member(family, ann)
        public = store.public_owner_id()
        group_notes = [store.add_note(make_note(family, f"family {i}", seed=i, author_id=ann)).id for i in range(2)]
        store.add_link(group_notes[0] or 0, group_notes[1] or 0, "related")
        edited = store.get_note(group_notes[0] or 0)
        assert edited is not None
        edited.tags = ["medication"]
        store.update_note(edited, reason="evolution")  # a history row of the group
        store.add_note(make_note(public, "the lobby closes at ten", seed=5))
        store.add_note(make_note(bob, "bob's own", seed=6))

        def gate_scope(user: int) -> list[int]:
            decision = GateDecision((user,), {user: 0.9}, "verified", "best-match", 0.5, "face")
            return list(scoped_pool(decision, lambda u: [g.id for g in store.groups_of(u)], public).owner_ids)

        bob_scope, ann_scope = gate_scope(bob), gate_scope(ann)
        assert sorted(bob_scope) == sorted([bob, public]) and family in ann_scope
        with store.owner_scope(bob_scope):
            assert store.get_notes([n or 0 for n in group_notes]) == []
    with psycopg.connect(terminal_url, autocommit=True) as raw:
        for scope, expected in ((bob_scope, {bob, public}), (ann_scope, {family, public})):  # Ann has no own note
            with raw.transaction():
                raw.execute("SELECT set_config('kiosk.owner_ids', %s, true)", ("{" + ",".join(map(str, scope)) + "}",))
                # No WHERE clause: the non-member's scope sees no row of the group, the member's does.
                assert {r[0] for r in raw.execute("SELECT owner_id FROM notes").fetchall()} == expected
                for table in ("links", "history"):
                    owners = {r[0] for r in raw.execute(f"SELECT owner_id FROM {table}").fetchall()}
                    assert owners == ({family} & expected)
                assert raw.execute("UPDATE notes SET content = 'x' WHERE owner_id = %s", (family,)).rowcount == (
                    2 if family in expected else 0
                )
                raise psycopg.Rollback()


def test_sealed_fleet_store_keeps_no_text_or_template_in_clear(urls: tuple[str, str]) -> None:
    from kiosk.security.sealing import MasterKey, SealingError, new_key

    admin_url, terminal_url = urls
    master = MasterKey(new_key(), "test")
    with PostgresStore(terminal_url, master_key=master) as store:
        ann = store.add_user("Ann").id
        template = np.arange(1, 9, dtype=np.float32)
        store.set_templates(ann, "face", template[None, :], "sha")
        note = store.add_note(make_note(ann, "my locker code is 4711", seed=1, keywords=["locker"], context="gym"))
        note.content = "my locker code is 4712"
        store.update_note(note, reason="edit")
        assert store.lexical([ann], "locker", 5)[0][0] == note.id  # the search vector is the documented exception
        generation = store.key_generation(ann)
        store.set_templates(ann, "face", template[None, :] * 2, "sha")  # re-enrollment re-keys the owner
        assert store.key_generation(ann) == generation + 1
    with psycopg.connect(admin_url, autocommit=True) as raw:
        # Everything but the vectors and the text-search vector (the documented exception, as on SQLite).
        dump = " ".join(
            str(row)
            for query in (
                "SELECT content, keywords, tags, context, sealed FROM notes",
                "SELECT before, after, sealed FROM history",
            )
            for row in raw.execute(query).fetchall()
        )
        assert "4711" not in dump and "4712" not in dump and "gym" not in dump
        assert template.tobytes() not in b"".join(bytes(r[0]) for r in raw.execute("SELECT vector FROM templates"))
    with PostgresStore(terminal_url, master_key=master) as reopened:
        stored = reopened.get_note(note.id or 0)
        assert stored is not None and stored.content == "my locker code is 4712" and stored.context == "gym"
        assert reopened.history(note.id or 0)[-1].after == {"content": "my locker code is 4712"}
        assert np.allclose(reopened.templates("face")[0].vector, template * 2)
    with pytest.raises(StoreError, match="encrypted"):
        PostgresStore(terminal_url)
    with pytest.raises(SealingError, match="another master key"):
        PostgresStore(terminal_url, master_key=MasterKey(new_key(), "other"))


def test_a_clear_fleet_database_is_sealed_in_place_on_the_first_keyed_open(urls: tuple[str, str]) -> None:
    from kiosk.security.sealing import MasterKey, new_key

    _, terminal_url = urls
    with PostgresStore(terminal_url) as clear:
        ann = clear.add_user("Ann").id
        note = clear.add_note(make_note(ann, "said in clear", seed=1))
    master = MasterKey(new_key(), "test")
    with PostgresStore(terminal_url, master_key=master) as sealed:
        assert sealed.get_note(note.id or 0).content == "said in clear"  # type: ignore[union-attr]
        assert count_rows(sealed, "notes", "WHERE content <> '' OR sealed IS NULL") == 0


def test_two_terminals_sealing_a_clear_fleet_at_once_lose_nothing(urls: tuple[str, str]) -> None:
    """Both make the owners' first data keys and seal the same rows: one key per owner wins, every note reads."""
    from concurrent.futures import ThreadPoolExecutor

    from kiosk.security.sealing import MasterKey, new_key

    _, terminal_url = urls
    with PostgresStore(terminal_url) as clear:
        owners = [clear.add_user(f"user{i}").id for i in range(4)]
        for i in range(40):
            clear.add_note(make_note(owners[i % 4], f"note {i}", seed=i))
    master = MasterKey(new_key(), "fleet")
    with ThreadPoolExecutor(2) as pool:
        opened = list(pool.map(lambda _: PostgresStore(terminal_url, master_key=master), range(2)))
    for store in opened:
        assert sorted(n.content for o in owners for n in store.list_notes(o)) == sorted(f"note {i}" for i in range(40))
        store.close()


def test_migrating_a_sealed_terminal_into_a_sealed_fleet_keeps_scopes(urls: tuple[str, str], tmp_path: Path) -> None:
    from kiosk.memory import SqliteStore
    from kiosk.memory.migrate import migrate
    from kiosk.security.sealing import MasterKey, new_key

    _, terminal_url = urls
    master = MasterKey(new_key(), "fleet")
    with SqliteStore(tmp_path / "memory.db", master_key=master) as lite:
        ann = lite.add_user("Ann").id
        family = lite.add_group("family").id
        lite.add_member(family, ann)
        lite.add_note(
            make_note(family, "the spare key is under the pot", seed=1, author_id=ann, sensitivity="location")
        )
        lite.add_note(make_note(ann, "mine", seed=2))
        with PostgresStore(terminal_url, master_key=master) as fleet:
            report = migrate(lite, fleet)
            assert report.verified and (report.notes_total, report.memberships_total) == (2, 1)
            fleet_family = fleet.group_by_name("family")
            assert fleet_family is not None
            (note,) = fleet.list_notes(fleet_family.id)
            assert note.content == "the spare key is under the pot" and note.sensitivity == "location"
            assert count_rows(fleet, "notes", "WHERE sealed IS NULL") == 0


def test_a_v1_fleet_database_upgrades_with_its_notes_personal_active_and_searchable(urls: tuple[str, str]) -> None:
    from kiosk.memory.pg_schema import FLEET_MIGRATIONS

    admin_url, terminal_url = urls
    with psycopg.connect(admin_url, autocommit=True) as admin:  # back to a database as the v1 build left it
        admin.execute("DROP SCHEMA public CASCADE")
        admin.execute("CREATE SCHEMA public")
        with admin.transaction():
            admin.execute("CREATE TABLE kiosk_schema (version INTEGER NOT NULL); INSERT INTO kiosk_schema VALUES (1)")
            FLEET_MIGRATIONS[0](admin)
            admin.execute("INSERT INTO users (id, name, created_at) VALUES (1, 'Ann', 0)")
            admin.execute(
                "INSERT INTO notes (id, owner_id, modality, content, timestamp, embedding, source, created_at, "
                "updated_at) VALUES (1, 1, 'face', 'we sailed to the lighthouse', 1.7e9, %s, 'chat', 0, 0)",
                (str(unit(4).tolist()),),
            )
    with PostgresStore(admin_url) as upgraded:
        assert upgraded.schema_version() == FLEET_LATEST_VERSION
    with PostgresStore(terminal_url) as store:
        note = store.get_note(1)
        assert note is not None and note.scope == "personal" and not note.archived and note.sensitivity is None
        assert note.reinforcements == 0 and note.last_used_at is None and note.author_id is None
        assert store.lexical([1], "lighthouse", 5)[0][0] == 1 and store.knn([1], unit(4), 1)[0][0] == 1
        assert [u.name for u in store.list_users()] == ["Ann"] and store.list_groups() == []
