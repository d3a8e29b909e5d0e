"""DynamoDB's part of telling people (the Notices protocol): contacts in the
CONTACTS partition by their principal's key, a marker item per notification
sent, and the one-time action links by their token's SHA-256, with one use
item per person and step (keys.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from chalicelib.domain import errors
from chalicelib.domain.models import Contact, Slice
from chalicelib.domain.names import canonical_principal
from chalicelib.storage.dynamodb import keys
from chalicelib.storage.dynamodb.client import Requests, n, s
from chalicelib.storage.dynamodb.keys import Item

if TYPE_CHECKING:
    from chalicelib.domain.links import ActionLink
    from chalicelib.domain.notifications import SlackPost


def contact_item(contact: Contact) -> Item:
    item: Item = {
        "PK": s(keys.CONTACTS_PK),
        "SK": s(canonical_principal(contact.principal)),
        "principal": s(contact.principal),
    }
    for name in ("email", "slack", "updated_at", "updated_by"):
        value = getattr(contact, name)
        if value is not None:
            item[name] = s(value)
    return item


def contact_of(item: Item) -> Contact:
    def text(name: str) -> Optional[str]:
        return item[name]["S"] if name in item else None

    return Contact(
        item["principal"]["S"],
        text("email"),
        text("slack"),
        text("updated_at"),
        text("updated_by"),
    )


def _link_item(link: ActionLink) -> Item:
    item: Item = {
        "PK": s(keys.link_pk(link.digest)),
        "SK": s(keys.LINK_SK),
        "run_id": n(link.run_id),
        "round": n(link.round),
        "step_id": n(link.step_id),
        "person": s(link.person),
        "action": s(link.action),
        "created_at": s(link.created_at),
        "expires_at": s(link.expires_at),
    }
    if link.on_behalf_of is not None:
        item["on_behalf_of"] = s(link.on_behalf_of)
    return item


class Notices:
    """The Notices part of the DynamoDB adapter (its requests are the adapter's)."""

    requests: Requests

    def put_contact(self, contact: Contact) -> Contact:
        self.requests.call("put_item", TableName=self.requests.table, Item=contact_item(contact))
        return contact

    def get_contact(self, principal_key: str) -> Contact:
        item = self.requests.read_item(s(keys.CONTACTS_PK), s(principal_key))
        if item is None:
            raise errors.NotFound(f"No contact for {principal_key!r}")
        return contact_of(item)

    def delete_contact(self, principal_key: str) -> Contact:
        from botocore.exceptions import ClientError

        try:
            answer = self.requests.call(
                "delete_item",
                TableName=self.requests.table,
                Key={"PK": s(keys.CONTACTS_PK), "SK": s(principal_key)},
                ConditionExpression="attribute_exists(PK)",
                ReturnValues="ALL_OLD",
            )
        except ClientError as exc:  # ConditionalCheckFailedException: Requests lets only it by
            raise errors.NotFound(f"No contact for {principal_key!r}") from exc
        return contact_of(answer["Attributes"])

    def list_contacts(self, after_key: Optional[str], limit: int) -> Slice[Contact]:
        page, more = self.requests.query_after(keys.CONTACTS_PK, after_key, limit + 1)
        return Slice(tuple(contact_of(item) for item in page[:limit]), more or len(page) > limit)

    def contacts_of(self, principal_keys: Sequence[str]) -> tuple[Contact, ...]:
        wanted = list(dict.fromkeys(principal_keys))
        found = self.requests.get_items(
            [{"PK": s(keys.CONTACTS_PK), "SK": s(key)} for key in wanted]
        )
        return tuple(contact_of(item) for item in found)

    def claim_notice(self, once_key: str, claim: str) -> bool:
        from botocore.exceptions import ClientError

        item = {"PK": s(keys.notice_pk(once_key)), "SK": s(keys.NOTICE_SK), "claim": s(claim)}
        try:  # free, or given back by a sender whose send failed
            self.requests.call(
                "put_item",
                TableName=self.requests.table,
                Item=item,
                ConditionExpression="attribute_not_exists(PK) OR released = :yes",
                ExpressionAttributeValues={":yes": {"BOOL": True}},
            )
        except ClientError:  # ConditionalCheckFailedException: Requests lets only it by
            return False
        return True

    def release_notice(self, once_key: str, claim: str) -> None:
        """Given back by a put, not a delete: the notifier's role needs no DeleteItem."""
        from botocore.exceptions import ClientError

        key = {"PK": s(keys.notice_pk(once_key)), "SK": s(keys.NOTICE_SK)}
        try:
            self.requests.call(
                "put_item",
                TableName=self.requests.table,
                Item={**key, "claim": s(claim), "released": {"BOOL": True}},
                ConditionExpression="claim = :claim",
                ExpressionAttributeValues={":claim": s(claim)},
            )
        except ClientError:  # someone else's claim now: theirs to keep
            return

    def put_links(self, links: Sequence[ActionLink]) -> None:
        for link in links:
            self._put_if_free(_link_item(link))

    def get_link(self, digest: str) -> Optional[ActionLink]:
        from chalicelib.domain.links import ActionLink, use_key

        item = self.requests.read_item(s(keys.link_pk(digest)), s(keys.LINK_SK))
        if item is None:
            return None
        link = ActionLink(
            digest,
            int(item["run_id"]["N"]),
            int(item["round"]["N"]),
            int(item["step_id"]["N"]),
            item["person"]["S"],
            item["action"]["S"],
            item["created_at"]["S"],
            item["expires_at"]["S"],
            item["on_behalf_of"]["S"] if "on_behalf_of" in item else None,
        )
        use = self.requests.read_item(s(keys.link_use_pk(use_key(link))), s(keys.LINK_USE_SK))
        if use is None:
            return link
        return link._replace(used_digest=use["digest"]["S"], used_at=use["used_at"]["S"])

    def use_link(self, link: ActionLink, at: str) -> bool:
        from chalicelib.domain.links import use_key

        return self._put_if_free(
            {
                "PK": s(keys.link_use_pk(use_key(link))),
                "SK": s(keys.LINK_USE_SK),
                "digest": s(link.digest),
                "used_at": s(at),
            }
        )

    def unuse_link(self, link: ActionLink) -> None:
        from chalicelib.domain.links import use_key

        key = {"PK": s(keys.link_use_pk(use_key(link))), "SK": s(keys.LINK_USE_SK)}
        self._delete_if(key, "digest", s(link.digest))

    def contact_of_slack_user(self, slack_id: str) -> Optional[Contact]:
        # The CONTACTS partition read whole, filtered: contacts are few, and
        # a click is rare; an index would cost every contact's write.
        for item in self.requests.query_partition(keys.CONTACTS_PK, "user:"):
            if item.get("slack", {}).get("S") == slack_id:
                return contact_of(item)
        return None

    def put_slack_post(self, post: SlackPost) -> None:
        item = {
            "PK": s(keys.slack_posts_pk(post.run_id, post.round, post.step_id)),
            "SK": s(f"{post.channel}#{post.ts}"),
            "channel": s(post.channel),
            "ts": s(post.ts),
            "principal": s(post.principal),
        }
        self.requests.call("put_item", TableName=self.requests.table, Item=item)

    def slack_posts(self, run_id: int, round_: int, step_id: int) -> tuple[SlackPost, ...]:
        from chalicelib.domain.notifications import SlackPost

        pk = keys.slack_posts_pk(run_id, round_, step_id)
        return tuple(
            SlackPost(
                run_id,
                round_,
                step_id,
                item["channel"]["S"],
                item["ts"]["S"],
                item["principal"]["S"],
            )
            for item in self.requests.query_partition(pk)
        )

    def _put_if_free(self, item: Item) -> bool:
        """Put `item` if its key is free; whether it was."""
        from botocore.exceptions import ClientError

        try:
            self.requests.call(
                "put_item",
                TableName=self.requests.table,
                Item=item,
                ConditionExpression="attribute_not_exists(PK)",
            )
        except ClientError:  # ConditionalCheckFailedException: Requests lets only it by
            return False
        return True

    def _delete_if(self, key: Item, name: str, value: dict[str, Any]) -> None:
        """Delete the item of `key` if its attribute `name` is `value`."""
        from botocore.exceptions import ClientError

        try:
            self.requests.call(
                "delete_item",
                TableName=self.requests.table,
                Key=key,
                ConditionExpression="#name = :value",
                ExpressionAttributeNames={"#name": name},
                ExpressionAttributeValues={":value": value},
            )
        except ClientError:  # someone else's claim now: theirs to keep
            return
