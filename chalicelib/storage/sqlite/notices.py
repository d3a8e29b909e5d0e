"""SQLite's part of telling people (the Notices protocol): contacts, the
markers of notifications sent, and the one-time action links (by their
token's SHA-256). Tables: migrations.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Contact, Slice
from chalicelib.storage.sqlite.connections import Connections

if TYPE_CHECKING:
    from chalicelib.domain.links import ActionLink
    from chalicelib.domain.notifications import SlackPost

CONTACT_COLUMNS = "principal, email, slack, updated_at, updated_by"
LINK_COLUMNS = (
    "l.digest, l.run_id, l.round, l.step_id, l.person, l.action, l.created_at, l.expires_at, "
    "l.on_behalf_of, u.digest, u.used_at"
)


class NoticeRows(Connections):
    """The Notices part of the SQLite adapter."""

    def put_contact(self, contact: Contact) -> Contact:
        from chalicelib.domain.names import canonical_principal

        with self._write() as conn:
            conn.execute(
                f"INSERT OR REPLACE INTO contacts (principal_key, {CONTACT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (canonical_principal(contact.principal), *contact),
            )
        return contact

    def get_contact(self, principal_key: str) -> Contact:
        found = self.contacts_of([principal_key])
        if not found:
            raise errors.NotFound(f"No contact for {principal_key!r}")
        return found[0]

    def delete_contact(self, principal_key: str) -> Contact:
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {CONTACT_COLUMNS} FROM contacts WHERE principal_key = ?", (principal_key,)
            ).fetchone()
            if row is None:
                raise errors.NotFound(f"No contact for {principal_key!r}")
            conn.execute("DELETE FROM contacts WHERE principal_key = ?", (principal_key,))
        return Contact(*row)

    def list_contacts(self, after_key: Optional[str], limit: int) -> Slice[Contact]:
        found = (
            self._connection()
            .execute(
                f"SELECT {CONTACT_COLUMNS} FROM contacts WHERE principal_key > ? "
                "ORDER BY principal_key LIMIT ?",
                (after_key or "", limit + 1),
            )
            .fetchall()
        )
        return Slice(tuple(Contact(*row) for row in found[:limit]), len(found) > limit)

    def contacts_of(self, principal_keys: Sequence[str]) -> tuple[Contact, ...]:
        if not principal_keys:
            return ()
        marks = ", ".join("?" for _ in principal_keys)
        found = dict(
            (row[0], Contact(*row[1:]))
            for row in self._connection().execute(
                f"SELECT principal_key, {CONTACT_COLUMNS} FROM contacts "
                f"WHERE principal_key IN ({marks})",
                tuple(principal_keys),
            )
        )
        return tuple(found[key] for key in principal_keys if key in found)

    def claim_notice(self, once_key: str, claim: str) -> bool:
        with self._write() as conn:
            claimed = conn.execute(
                "INSERT OR IGNORE INTO notices_sent (once_key, claim) VALUES (?, ?)",
                (once_key, claim),
            ).rowcount
        return claimed == 1

    def release_notice(self, once_key: str, claim: str) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM notices_sent WHERE once_key = ? AND claim = ?", (once_key, claim)
            )

    def put_links(self, links: Sequence[ActionLink]) -> None:
        from chalicelib.domain.links import use_key

        with self._write() as conn:
            conn.executemany(
                "INSERT INTO action_links (digest, run_id, round, step_id, person, action, "
                "created_at, expires_at, on_behalf_of, use_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*link[:9], use_key(link)) for link in links],
            )

    def get_link(self, digest: str) -> Optional[ActionLink]:
        from chalicelib.domain.links import ActionLink

        row = (
            self._connection()
            .execute(
                f"SELECT {LINK_COLUMNS} FROM action_links l "
                "LEFT JOIN action_link_uses u ON u.use_key = l.use_key WHERE l.digest = ?",
                (digest,),
            )
            .fetchone()
        )
        return ActionLink(*row) if row else None

    def use_link(self, link: ActionLink, at: str) -> bool:
        from chalicelib.domain.links import use_key

        with self._write() as conn:
            used = conn.execute(
                "INSERT OR IGNORE INTO action_link_uses (use_key, digest, used_at) "
                "VALUES (?, ?, ?)",
                (use_key(link), link.digest, at),
            ).rowcount
        return used == 1

    def contact_of_slack_user(self, slack_id: str) -> Optional[Contact]:
        row = (
            self._connection()
            .execute(
                f"SELECT {CONTACT_COLUMNS} FROM contacts WHERE slack = ? "
                "AND principal_key LIKE 'user:%' ORDER BY principal_key LIMIT 1",
                (slack_id,),
            )
            .fetchone()
        )
        return Contact(*row) if row else None

    def put_slack_post(self, post: SlackPost) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO slack_posts "
                "(run_id, round, step_id, channel, ts, principal) VALUES (?, ?, ?, ?, ?, ?)",
                tuple(post),
            )

    def slack_posts(self, run_id: int, round_: int, step_id: int) -> tuple[SlackPost, ...]:
        from chalicelib.domain.notifications import SlackPost

        found = self._connection().execute(
            "SELECT run_id, round, step_id, channel, ts, principal FROM slack_posts "
            "WHERE run_id = ? AND round = ? AND step_id = ? ORDER BY channel, ts",
            (run_id, round_, step_id),
        )
        return tuple(SlackPost(*row) for row in found)

    def unuse_link(self, link: ActionLink) -> None:
        from chalicelib.domain.links import use_key

        with self._write() as conn:
            conn.execute(
                "DELETE FROM action_link_uses WHERE use_key = ? AND digest = ?",
                (use_key(link), link.digest),
            )
