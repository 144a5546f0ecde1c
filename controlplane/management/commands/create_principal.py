from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.principals import principal_create


class Command(BaseCommand):
    help = "Create a principal User:NAME (or give it a new token); prints the token last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument(
            "--super-user", action="store_true", help="a super user, as Kafka's super.users"
        )
        parser.add_argument(
            "--broker", action="store_true", help="a broker identity: CLUSTER_ACTION on CLUSTER"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            token = principal_create(
                name=options["name"], super_user=options["super_user"], broker=options["broker"]
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        kinds = [k for k in ("super_user", "broker") if options[k]]
        self.stdout.write(
            f"Principal User:{options['name']} ({', '.join(kinds) or 'plain'}). "
            "Its token (shown once):"
        )
        self.stdout.write(token)
